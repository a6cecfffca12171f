#!/usr/bin/env bash
# Wave 5's last GPU call (2026-12-07), on main after every branch of this wave merged: the NVML lookup by bus id
# against the index scan (bench/gpu_at_check.py), the passive check inside a PID namespace with a rival outside it
# (bench/gate_expect_idle.sh), then the default and quick profiles three times each (bench/profile_times.sh), with
# each run's closing lines (its exit meaning, the figures judged against an expectation).
set -u
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1
date -u; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
(source bench/devpath.sh && python3 bench/gpu_at_check.py; echo "gpu_at_check rc=$?")
mkdir -p /tmp/gate && OUT=/tmp/gate bash bench/gate_expect_idle.sh 2>&1 | cut -c1-300
export SKIP_SUBSTEPS=1
RUNS=${RUNS:-3} bash bench/profile_times.sh 2>&1 | tee $OUT/profile_times.txt | grep -v "^outputs"
for f in /tmp/tmp.*/after-*.log; do echo "-- $(basename $f): $(grep -h 'figures against a reference' $f | cut -c1-160) | $(tail -1 $f | cut -c1-200)"; done 2>/dev/null | tee $OUT/closing_lines.txt
rm -f $OUT/*.db
