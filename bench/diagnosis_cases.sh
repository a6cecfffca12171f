#!/usr/bin/env bash
# Issue 20 on the H200: an impossible fp32 figure under NVIDIA_TF32_OVERRIDE=1 must name the override
# (and say `unset NVIDIA_TF32_OVERRIDE`), not the timer; the same run without it is clean; probe says the build fits.
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
echo "== NVIDIA_TF32_OVERRIDE=1 rigcheck run matmul --profile quick --device cuda:0"
NVIDIA_TF32_OVERRIDE=1 rigcheck run matmul --profile quick --device cuda:0 --json $OUT/tf32_override.json > $OUT/tf32_override.log 2>&1
echo "rc=$? (1 expected: fp32 fails naming the override)"; lines $OUT/tf32_override.json fp32
echo "== the same without it (fp32 must not fail)"
rigcheck run matmul --profile quick --device cuda:0 --json $OUT/tf32_plain.json > $OUT/tf32_plain.log 2>&1
echo "rc=$?"; lines $OUT/tf32_plain.json fp32
echo "== probe: the build fits this GPU"
rigcheck run probe --device cuda:0 --json $OUT/probe.json > $OUT/probe.log 2>&1
echo "rc=$?"; lines $OUT/probe.json cuda:0
