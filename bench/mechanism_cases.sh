#!/usr/bin/env bash
# Issue 41's "Done when" on the GPU machine (items 1-4): each case prints its exit code, the run's last line (what
# a non-zero exit means, issue 43) and every verdict that is not PASS, into $OUT/mechanism_cases.txt.
#   threads:  a sitecustomize.py calling torch.set_num_threads(1): the CPU figures name the thread count
#   holder:   another process holding all but 2 GiB of the GPU: no FAIL and no CRASH, exit 7 or 0, the holder named
#   alloc:    PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True on a quiet default run: no WARN
#   idle:     `rigcheck run matmul` from an idle GPU, five times: no WARN
# CASES="threads holder" picks some; DEVICE (cuda:0) picks the GPU. About 6 minutes for all four.
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
export PYTHONUNBUFFERED=1 RIGCHECK_STORE=${RIGCHECK_STORE:-$OUT/mechanism.db}
DEVICE=${DEVICE:-cuda:0}
SAID=$OUT/mechanism_cases.txt
show() {  # show TAG RC: the exit code, the last line of the run's output, and the verdicts that are not PASS
    echo "== $1: exit $2; last line: $(tail -1 "$OUT/$1.log")" | tee -a "$SAID"
    python3 - "$OUT/$1.json" <<'PY' | tee -a "$SAID"
import json, sys
try:
    report = json.load(open(sys.argv[1]))
except (OSError, ValueError) as error:
    sys.exit(f"   no report: {error}")
for v in report["verdicts"]:
    if v["status"] != "PASS":
        print(f"   {v['status']:<12} {v['stage']}/{v['check_name']} [{v.get('device') or ''}]: {v['explanation'][:400]}")
for m in report.get("measurements", []):
    mech = (m.get("params") or {}).get("mechanism")
    if mech and m["stage"] == "matmul":
        print(f"   figure {m['name']}: {m['value']:.4g} {m['unit']} on {mech.get('threads')} of {mech.get('ceiling')} "
              f"threads (set by {mech.get('set_by') or 'nothing found'})")
PY
}
run_case() {  # run_case TAG ARGS...: one rigcheck run, its report in $OUT/TAG.json
    local tag=$1; shift
    rigcheck run "$@" --device "$DEVICE" --json "$OUT/$tag.json" > "$OUT/$tag.log" 2>&1
    local rc=$?
    show "$tag" $rc
}
for case in ${CASES:-threads holder alloc idle}; do
    case $case in
    threads)
        site=$(mktemp -d)
        printf 'import torch\ntorch.set_num_threads(1)\n' > "$site/sitecustomize.py"
        DEVICE=cpu PYTHONPATH="$site:$PYTHONPATH" run_case threads matmul probe
        ;;
    holder)
        ready=$(mktemp -u)
        python3 -c "
import time, torch
free, total = torch.cuda.mem_get_info('$DEVICE')
held = torch.empty(free - 2 * 2**30, dtype=torch.uint8, device='$DEVICE')
open('$ready', 'w').write(str(held.numel()))
time.sleep(3600)
" & holder=$!
        for _ in $(seq 120); do [ -s "$ready" ] && break; sleep 0.5; done
        echo "== holder: pid $holder holds $(cat "$ready" 2> /dev/null) bytes; $(nvidia-smi --query-gpu=memory.used,memory.free --format=csv,noheader -i ${DEVICE#cuda:})" | tee -a "$SAID"
        run_case holder
        kill $holder; wait $holder 2> /dev/null
        ;;
    alloc)
        PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True run_case alloc
        ;;
    idle)
        for i in 1 2 3 4 5; do
            sleep 20  # let the GPU fall back to its idle clock
            echo "-- idle $i: SM clock before $(nvidia-smi --query-gpu=clocks.sm --format=csv,noheader -i ${DEVICE#cuda:})" | tee -a "$SAID"
            run_case "idle$i" matmul
            logs=$(grep -o "logs in .*" "$OUT/idle$i.log" | cut -c9-)
            grep -rh "working clock" ${logs:-/nonexistent} 2> /dev/null | head -1 | sed 's/^/   /' | tee -a "$SAID"
        done
        ;;
    esac
done
echo "== summary" | tee -a "$SAID"
grep -E "^== |WARN|FAIL|CRASH" "$SAID" | grep -v "^== summary" | cut -c1-200
