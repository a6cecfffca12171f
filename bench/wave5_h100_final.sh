#!/usr/bin/env bash
# Wave 5's last GPU call, on an H100 SXM (2026-12-07), the GPU no reference entry was measured on: issue 40's quiet
# default run and a quick max-find, every figure against its expectation and basis (bench/arch_check.sh), the CPU's
# training figures included (judged by the H200 host's measured AVX-512 share); then the passive check in a PID
# namespace timed (bench/gate_expect_idle.sh); then the default and quick profiles three times each
# (bench/profile_times.sh) with each run's closing lines.
set -u
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; uptime
bash bench/arch_check.sh 2>&1 | cut -c1-330
grep -E "figures against|^exit|train c.*cpu" $OUT/default.out | cut -c1-200
mkdir -p /tmp/gate && OUT=/tmp/gate bash bench/gate_expect_idle.sh 2>&1 | cut -c1-300
export SKIP_SUBSTEPS=1
RUNS=${RUNS:-3} bash bench/profile_times.sh 2>&1 | tee $OUT/profile_times.txt | grep -v "^outputs"
for f in /tmp/tmp.*/after-*.log; do echo "-- $(basename $f): $(grep -h 'figures against a reference' $f | cut -c1-160) | $(tail -1 $f | cut -c1-200)"; done 2>/dev/null | tee $OUT/closing_lines.txt
rm -f $OUT/*.db
