#!/usr/bin/env bash
# Issue 31, items 1, 5 and 6, on one H200: other users of the GPU that rigcheck cannot see, idle memory holders,
# every figure judged on its clocks. Each case runs `rigcheck run matmul bandwidth --profile quick` on cuda:0.
#   1 quiet                        expect: 0 SUSPECT, 0 'clocks not judged', unlisted memory under 256 MiB
#   2 quiet, in its own PID namespace (as in a container)        expect: the same as 1
#   3 in its own PID namespace, a bf16 matmul loop outside it    expect: GPU figures SUSPECT "another process
#     that rigcheck cannot see (another container or PID namespace) is using cuda:0: ... MiB, ..."; no FAIL
#   4 an idle 120 GiB holder beside it (visible)                 expect: TRUSTED with a note naming the holder
#   5 the same holder outside its PID namespace (unseen)         expect: TRUSTED with a note "... holds 120.0 GiB
#     ... but did no work (GPU idle ...)", or SUSPECT "whether it worked could not be told" where no idle moment
#   6 what the span clock readings cost against each figure's span (expect: under 1%), and the idle probe on a quiet GPU
#     (expect: utilization 0, a few samples; it costs 0.6 s once a minute per stage child)
# About 4 minutes. Needs root for unshare (or user namespaces).
# Read NVML's view at the top of each namespaced case: if it lists NONE of rigcheck's processes from inside
# (the driver hides the namespace), the figures say LIST-BLIND, and case 3 must still be SUSPECT by the stage
# child's idle probe ("GPU busy ...% while rigcheck had no work on it"); if it lists them, by memory outside
# the lists as well. Case 5 behind blind lists is TRUSTED with the LIST-BLIND note (the holder cannot be named).
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
OUT=${OUT:-$(mktemp -d)}
export PYTHONUNBUFFERED=1
STAGES="matmul bandwidth --profile quick --device cuda:0"
in_namespace() {  # run "$@" as PID 1's child in a fresh PID namespace, with this shell's environment
  unshare --pid --fork --mount-proc env PYTHONPATH="$PYTHONPATH" RIGCHECK_STORE="$RIGCHECK_STORE" "$@"
}
case_run() {  # name, then "ns" or "host"
  local name=$1 where=$2
  export RIGCHECK_STORE=$OUT/$name.db
  echo "== $name ($where): NVML's view first"
  if [ "$where" = ns ]; then
    in_namespace python3 bench/nvml_view.py
    in_namespace python3 -m rigcheck.tui.cli run $STAGES --json $OUT/$name.json > $OUT/$name.log 2>&1
  else
    python3 bench/nvml_view.py
    rigcheck run $STAGES --json $OUT/$name.json > $OUT/$name.log 2>&1
  fi
  echo "rc=$?"
  python3 bench/unseen_report.py $OUT/$name.json
}
unshare --pid --fork --mount-proc true || echo "!! unshare --pid does not work here: cases 2, 3 and 5 will fail"
only=${CASES:-all}  # CASES=rival runs only the rival in another PID namespace

if [ "$only" = all ]; then
case_run quiet host
case_run quiet_ns ns
fi

python3 -c "
import torch
a = torch.randn(8192, 8192, device='cuda:0', dtype=torch.bfloat16)
while True:
    a @ a
" & rival=$!
sleep 8
case_run rival_ns ns
kill $rival; wait $rival 2> /dev/null
[ "$only" = all ] || exit 0

python3 -c "
import time, torch
held = torch.empty(120 * 2**30, dtype=torch.uint8, device='cuda:0')
print('holding', held.numel() // 2**30, 'GiB', flush=True)
time.sleep(3600)
" & holder=$!
sleep 6
case_run holder host
case_run holder_ns ns
kill $holder; wait $holder 2> /dev/null

echo "== 6: span clock reading cost"
python3 bench/span_clock_cost.py $OUT/quiet.json $OUT/quiet_ns.json
echo "(results in $OUT)"
