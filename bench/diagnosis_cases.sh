#!/usr/bin/env bash
# Issue 20 on the H200: an impossible fp32 figure under NVIDIA_TF32_OVERRIDE=1 must name the override
# (and say `unset NVIDIA_TF32_OVERRIDE`), not the timer; the same run without it is clean; probe says the build fits.
# Issue 31 (CASES=31 runs only these): a rival outside rigcheck's PID namespace, the four settings, a bursty rival,
# an idle memory holder, and a quiet run; each must give one cause per figure and no FAIL (exit 1) for a rival.
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
OUT=${OUT:-$(mktemp -d)}
export RIGCHECK_STORE=$OUT/diagnosis.db PYTHONUNBUFFERED=1
lines() {  # every verdict and figure of a --json report whose text holds $2, one line each
  python3 - "$1" "$2" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for v in report["verdicts"]:
    if sys.argv[2] in (v["check_name"] + " " + v["explanation"]):
        print(f"  {v['status']:5} {v['stage']}/{v['check_name']} [{v['device']}]: {v['explanation']}")
for m in report["measurements"]:
    if sys.argv[2] in m["name"]:
        c = m.get("conditions") or {}
        print(f"  figure {m['name']} [{m['device']}]: {m['value']:,.4g} {m['unit']} {c.get('trust')} {c.get('trust_reasons')}")
PY
}
counts() {  # the exit code's statuses, each figure's trust, and every figure's settings and causes, one line each
  python3 - "$1" <<'PY'
import collections, json, sys
report = json.load(open(sys.argv[1]))
statuses = collections.Counter(v["status"] for v in report["verdicts"])
trust = collections.Counter((m.get("conditions") or {}).get("trust") for m in report["measurements"])
print(f"  verdicts {dict(statuses)}; figures {dict(trust)}")
causes = collections.defaultdict(set)
for v in report["verdicts"]:
    n = v.get("numbers") or {}
    if n.get("cause"):
        causes[(v["device"], n.get("figure") or v["check_name"])].add(n["cause"])
    if v["status"] not in ("PASS", "SKIP"):
        print(f"  {v['status']:12} {v['stage']}/{v['check_name']} [{v['device']}]: {v['explanation'][:400]}")
for m in report["measurements"]:
    c = m.get("conditions") or {}
    if c.get("settings") or c.get("trust") not in ("TRUSTED", None):
        named = [s["name"] for s in c.get("settings") or []]
        print(f"  figure {m['name']} [{m['device']}] {m['value']:,.4g} {c.get('trust')} settings={named} {c.get('trust_reasons')}")
two = {k: v for k, v in causes.items() if len(v) > 1}
print(f"  figures with two causes: {len(two)} {two if two else ''}")
PY
}
if [ "${CASES:-all}" != "31" ]; then
echo "== NVIDIA_TF32_OVERRIDE=1 rigcheck run matmul --profile quick --device cuda:0"
NVIDIA_TF32_OVERRIDE=1 rigcheck run matmul --profile quick --device cuda:0 --json $OUT/tf32_override.json > $OUT/tf32_override.log 2>&1
echo "rc=$? (1 expected: fp32 fails naming the override)"; lines $OUT/tf32_override.json fp32
echo "== the same without it (fp32 must not fail)"
rigcheck run matmul --profile quick --device cuda:0 --json $OUT/tf32_plain.json > $OUT/tf32_plain.log 2>&1
echo "rc=$?"; lines $OUT/tf32_plain.json fp32
echo "== probe: the build fits this GPU"
rigcheck run probe --device cuda:0 --json $OUT/probe.json > $OUT/probe.log 2>&1
echo "rc=$?"; lines $OUT/probe.json cuda:0
fi

# ---- issue 31 ----
rival_loop() {  # $1: seconds of work per burst (0: no pause), $2: pause between bursts
  python3 -c "
import sys, time, torch
a = torch.randn(8192, 8192, device='cuda:0', dtype=torch.bfloat16)
work, pause = float(sys.argv[1]), float(sys.argv[2])
while True:
    end = time.time() + (work or 3600)
    while time.time() < end:
        a @ a
    torch.cuda.synchronize()
    time.sleep(pause)
" "$1" "$2" &
}
echo "== rigcheck in its own PID namespace, a bf16 rival outside it (expect: no FAIL, exit 0 or 7; the rival named)"
unshare_pid="unshare --pid --fork --mount-proc"  # as root; else in a user namespace of its own
$unshare_pid true 2> /dev/null || unshare_pid="unshare --user --map-root-user --pid --fork --mount-proc"
rival_loop 0 0; rival=$!; sleep 8
$unshare_pid python3 -m rigcheck.tui.cli run matmul --profile quick --device cuda:0 \
  --json $OUT/unseen.json > $OUT/unseen.log 2>&1
echo "rc=$? (7 or 0 expected, never 1)"; kill $rival; wait $rival 2> /dev/null; counts $OUT/unseen.json
echo "== a bursty rival (0.5 s on, 0.5 s off) beside matmul (expect: no FAIL, exit 0 or 7)"
rival_loop 0.5 0.5; rival=$!; sleep 5
rigcheck run matmul --profile quick --device cuda:0 --json $OUT/bursty.json > $OUT/bursty.log 2>&1
echo "rc=$? (7 or 0 expected, never 1)"; kill $rival; wait $rival 2> /dev/null; counts $OUT/bursty.json
echo "== an idle process holding 120 GiB (expect: figures as a quiet run's, no FAIL, exit 0)"
python3 -c "
import time, torch
held = torch.empty(120 * 2**30, dtype=torch.uint8, device='cuda:0')
time.sleep(3600)
" & holder=$!; sleep 15
rigcheck run matmul bandwidth --profile quick --device cuda:0 --json $OUT/holder.json > $OUT/holder.log 2>&1
echo "rc=$?"; kill $holder; wait $holder 2> /dev/null; counts $OUT/holder.json
echo "== OMP_NUM_THREADS=1: probe warns; CPU figures carry it; the CPU best is NOT JUDGED, never PASS"
OMP_NUM_THREADS=1 rigcheck run probe matmul --profile quick --device cpu --json $OUT/omp.json > $OUT/omp.log 2>&1
echo "rc=$?"; counts $OUT/omp.json
echo "== PYTORCH_NO_CUDA_MEMORY_CACHING=1: probe warns; training figures carry it"
PYTORCH_NO_CUDA_MEMORY_CACHING=1 rigcheck run probe training --profile quick --device cuda:0 \
  --json $OUT/nocache.json > $OUT/nocache.log 2>&1
echo "rc=$?"; counts $OUT/nocache.json
echo "== NVIDIA_TF32_OVERRIDE=0: tf32's verdicts name the setting (INCONCLUSIVE, not FAIL 'software stack')"
NVIDIA_TF32_OVERRIDE=0 rigcheck run probe matmul --profile quick --device cuda:0 --json $OUT/tf32off.json \
  > $OUT/tf32off.log 2>&1
echo "rc=$? (7 expected)"; counts $OUT/tf32off.json
echo "== CUDA_LAUNCH_BLOCKING=1: every GPU figure carries it; best-fp8 and reference fp8 give one cause"
CUDA_LAUNCH_BLOCKING=1 rigcheck run probe matmul --profile quick --device cuda:0 --json $OUT/blocking.json \
  > $OUT/blocking.log 2>&1
echo "rc=$?"; counts $OUT/blocking.json
echo "== a quiet default run (expect: 0 SUSPECT, 0 INCONCLUSIVE; wall time within 5% of the last RESULTS)"
start=$(date +%s.%N)
rigcheck run --json $OUT/quiet.json > $OUT/quiet.log 2>&1
echo "rc=$? wall $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"; counts $OUT/quiet.json
