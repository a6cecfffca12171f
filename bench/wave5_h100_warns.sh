#!/usr/bin/env bash
# The H100's profile runs (bench/wave5_h100_final.sh) gave 1 WARN in a third default run and 2-3 in the second and
# third quick runs, in one store: the same sequence again, printing what each WARN said (bench/profile_times.py).
set -u
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
export PYTHONUNBUFFERED=1 SKIP_SUBSTEPS=1
date -u; nvidia-smi --query-gpu=name --format=csv,noheader; uptime
RUNS=3 bash bench/profile_times.sh 2>&1 | grep -E "^== |run [0-9]|WARN|FAIL|median wall"

for f in /tmp/tmp.*/after-*.log; do echo "-- $(basename $f): $(grep -h 'figures against a reference' $f | cut -c1-100)"; done 2>/dev/null
rm -f $OUT/*.db
