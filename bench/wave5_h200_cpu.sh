#!/usr/bin/env bash
# Issue 40, item 5, meant for the H200 host (2026-12-07): its CPU's training figures three times (rows for the table's
# "cpu training" kind: the share of cores x clock x FLOP/cycle an Intel AVX-512 CPU reaches), then the GPU checks
# wave 5 left unmeasured: the NVML lookup by bus id (bench/gpu_at_check.py) and the passive check inside a PID
# namespace with a rival outside it (bench/gate_expect_idle.sh).
# Run once, with `nvidia-h200` named; the device gave an H100 (the GPU issue 40 tests), so its CPU rows were not
# entered (bench/data/wave5/final/h100host_cpu_training_not_an_entry.txt); the entries came from the H200 host's
# three runs of 2026-12-03 instead (bench/data/wave4/default-*.json).
set -u
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime
source bench/devpath.sh
export RIGCHECK_STORE=/tmp/cpu.db
python3 -c "import torch; print('torch', torch.__version__, 'threads', torch.get_num_threads())"
for i in 1 2 3; do
  rigcheck run training --device cpu --json $OUT/cputrain$i.json > $OUT/cputrain$i.out 2>&1; echo "== cpu training run $i: rc=$?"
  grep -E "cpu train|figures against" $OUT/cputrain$i.out | cut -c1-200
done
python3 bench/cpu_training_rows.py rigcheck-h200host-cputrain-1207 $OUT/cputrain*.json | tee $OUT/cpu_rows.txt
python3 bench/gpu_at_check.py; echo "gpu_at_check rc=$?"
mkdir -p /tmp/gate && OUT=/tmp/gate bash bench/gate_expect_idle.sh 2>&1 | cut -c1-300
