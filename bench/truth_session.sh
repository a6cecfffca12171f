#!/usr/bin/env bash
# Issue 9 on the GPU machine: every GPU at once against a plain loop, then a quiet run and two contentions.
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$PYTHONPATH:/tmp/site RIGCHECK_STORE=$OUT/store.db PYTHONUNBUFFERED=1
what=${1:-all}
if [[ $what == all || $what == devices ]]; then
  echo "== plain loop per GPU (before)"; python3 bench/plain_per_device.py $OUT/plain-before.json
  start=$(date +%s)
  rigcheck run --device all --json $OUT/all.json > $OUT/all.out 2> $OUT/all.err
  echo "rigcheck run --device all: rc=$? wall $(( $(date +%s) - start )) s"
  echo "== plain loop per GPU (after)"; python3 bench/plain_per_device.py $OUT/plain-after.json
  python3 bench/summarize_run.py $OUT/all.json
fi
if [[ $what == all || $what == single ]]; then
  start=$(date +%s)
  rigcheck run --device cuda:0 --json $OUT/quiet.json > $OUT/quiet.out 2> $OUT/quiet.err
  echo "quiet default run: rc=$? wall $(( $(date +%s) - start )) s"
  python3 bench/summarize_run.py $OUT/quiet.json
  n=$(nproc); pids=""
  for _ in $(seq "$n"); do python3 -c "while True: pass" & pids="$pids $!"; done
  sleep 1
  rigcheck run training --device cuda:0 --json $OUT/burners.json > $OUT/burners.out 2> $OUT/burners.err
  echo "training beside $n CPU burners: rc=$?"; kill $pids
  python3 bench/summarize_run.py $OUT/burners.json
  python3 -c "
import torch, time
a = torch.randn(8192, 8192, device='cuda:0', dtype=torch.bfloat16)
end = time.time() + 300
while time.time() < end:
    a @ a
" & rival=$!
  sleep 5
  rigcheck run matmul --device cuda:0 --json $OUT/rival.json > $OUT/rival.out 2> $OUT/rival.err
  echo "matmul beside a rival bf16 process (pid $rival): rc=$?"; kill $rival
  python3 bench/summarize_run.py $OUT/rival.json
fi
