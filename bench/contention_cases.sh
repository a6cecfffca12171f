#!/usr/bin/env bash
# Issue 20 on the H200: real contention still makes figures SUSPECT with their cause named: a bf16 rival
# process on the same GPU during a quick matmul sweep, then 16 CPU burners during quick training.
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
export RIGCHECK_STORE=$OUT/contention.db PYTHONUNBUFFERED=1
python3 -c "
import torch
a = torch.randn(8192, 8192, device='cuda:0', dtype=torch.bfloat16)
while True:
    a @ a
" & rival=$!
sleep 8
rigcheck run matmul --profile quick --device cuda:0 --json $OUT/rival.json > $OUT/rival.log 2>&1
echo "== matmul beside a bf16 rival (pid $rival): rc=$?"; kill $rival; wait $rival 2> /dev/null
python3 bench/summarize_run.py $OUT/rival.json | grep -E "^==|SUSPECT|WARN|FAIL" | cut -c1-260
burners=()
for _ in $(seq 16); do python3 -c "while True: pass" & burners+=($!); done
sleep 3
rigcheck run training --profile quick --device cuda:0 --json $OUT/burners.json > $OUT/burners.log 2>&1
echo "== training beside 16 CPU burners: rc=$?"; kill "${burners[@]}"
python3 bench/summarize_run.py $OUT/burners.json | grep -E "^==|SUSPECT|WARN|FAIL" | head -12 | cut -c1-260
