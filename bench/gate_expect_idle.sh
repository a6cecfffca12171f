#!/usr/bin/env bash
# Issue 41 item 5 on the GPU machine: `check --expect-idle` inside a PID namespace (as in a container) with a
# rival outside it must not say OK; with the GPU quiet it must. Each exit style, then a hung-free timing.
# Run as root: source bench/devpath.sh is done here; $OUT receives the logs.
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
OUT=${OUT:-/tmp}
inside() { unshare --pid --fork --mount-proc python3 -m rigcheck.tui.cli check --no-store "$@"; }
for style in rigcheck nagios npd; do
  inside --expect-idle --exit-style $style > $OUT/quiet_$style.log 2>&1
  echo "== quiet GPU, --expect-idle, $style: rc=$? $(head -1 $OUT/quiet_$style.log)"
done
python3 -c "
import torch
a = torch.randn(8192, 8192, device='cuda:0', dtype=torch.bfloat16)
while True:
    a @ a
" & rival=$!
sleep 10  # the rival's context and first kernels
for style in rigcheck nagios npd; do
  start=$(python3 -c "import time; print(time.time())")
  inside --expect-idle --exit-style $style -v > $OUT/rival_$style.log 2>&1
  rc=$?
  echo "== rival outside the namespace (pid $rival), --expect-idle, $style: rc=$rc in $(python3 -c "import time; print(round(time.time() - $start, 2))") s: $(head -1 $OUT/rival_$style.log)"
done
inside > $OUT/rival_plain.log 2>&1
echo "== rival outside, no --expect-idle: rc=$? $(head -1 $OUT/rival_plain.log)"
grep -h "processes" $OUT/rival_rigcheck.log | cut -c1-240
kill $rival; wait $rival 2> /dev/null
