#!/usr/bin/env bash
# Issue 32 on the H200: one run of every figure kind rigcheck measures on a GPU (matmul sweep, max-find, device
# copy, host link, training) and the CPU's matmul, printed as rows for engine/measure/references.json with the
# date, torch and driver versions, and the run's expectation verdicts. Run it in three separate device calls;
# where the three agree, paste the median as a "rigcheck-measured" entry with "runs": 3.
# Then, in the same call, the slowdowns the issue names, each expected to be named by a figure other than matmul:
#   PYTORCH_NO_CUDA_MEMORY_CACHING=1 (training, against the H200's training references), OMP_NUM_THREADS=1 (the CPU,
#   against its own three clean runs in this store, and against the table once the CPU rows printed here are in it).
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
export RIGCHECK_STORE=$OUT/store.db PYTHONUNBUFFERED=1
rigcheck run --device cuda:0 --json $OUT/default.json > $OUT/default.out 2>&1; echo "== default run: rc=$?"
rigcheck run matmul --max-find --profile quick --device cuda:0 --json $OUT/maxfind.json > $OUT/maxfind.out 2>&1
echo "== max-find: rc=$?"
rigcheck run matmul --device cpu --json $OUT/cpu.json > $OUT/cpu.out 2>&1; echo "== matmul on the CPU: rc=$?"
python3 bench/reference_rows.py $OUT/default.json $OUT/maxfind.json $OUT/cpu.json
if [ "${1:-}" = "--slowdowns" ]; then
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 rigcheck run training --device cuda:0 --json $OUT/nocache.json > $OUT/nocache.out 2>&1
  echo "== PYTORCH_NO_CUDA_MEMORY_CACHING=1 training: rc=$?"
  for i in 2 3; do  # with the first, three clean CPU runs in this store: the history OMP_NUM_THREADS=1 is judged by
    rigcheck run matmul --device cpu > $OUT/cpu$i.out 2>&1; echo "== matmul on the CPU, run $i: rc=$?"
  done
  OMP_NUM_THREADS=1 rigcheck run matmul --device cpu --json $OUT/omp1.json > $OUT/omp1.out 2>&1
  echo "== OMP_NUM_THREADS=1 matmul on the CPU: rc=$?"
  python3 bench/reference_rows.py $OUT/nocache.json $OUT/omp1.json | grep -v '^   {'
fi
