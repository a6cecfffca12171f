#!/usr/bin/env bash
# Issue 40 on the lent GPU: a quiet default run and a quick max-find, each figure against its expectation and basis
# (bench/arch_check.py). On an H200 its own entries are switched off (RIGCHECK_LEAVE_OUT=H200), so it is judged
# as an unlisted GPU would be; on any other GPU nothing is switched off (the H200's entries carry to it).
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
export RIGCHECK_STORE=$OUT/store.db PYTHONUNBUFFERED=1
name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null || echo "?")
echo "== GPU 0: $name"; nvidia-smi --query-gpu=clocks.max.sm,clocks.max.mem,memory.total --format=csv -i 0
case "$name" in *H200*) export RIGCHECK_LEAVE_OUT=H200; echo "== RIGCHECK_LEAVE_OUT=H200";; esac
rigcheck references > $OUT/references.txt 2>&1; echo "== references: rc=$?"; head -80 $OUT/references.txt
rigcheck run --device cuda:0 --json $OUT/default.json > $OUT/default.out 2>&1; echo "== default run: rc=$?"
tail -5 $OUT/default.out
rigcheck run matmul --max-find --profile quick --device cuda:0 --json $OUT/maxfind.json > $OUT/maxfind.out 2>&1
echo "== max-find: rc=$?"; tail -3 $OUT/maxfind.out
python3 bench/arch_check.py $OUT/default.json $OUT/maxfind.json | tee $OUT/arch_check.txt
