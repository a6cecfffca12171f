#!/usr/bin/env bash
# One batch of GPU-machine measurements for bench/RESULTS.md; every output also lands in $OUT.
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
export RIGCHECK_STORE=$OUT/store.db PYTHONUNBUFFERED=1
what=${1:-all}
if [[ $what == all || $what == monitor ]]; then
  echo "== monitor vs nvidia-smi"
  nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,utilization.gpu,memory.used --format=csv
  rigcheck monitor --json --count 20 --interval 0.1 > $OUT/monitor.jsonl; tail -1 $OUT/monitor.jsonl | cut -c1-600
  nvidia-smi --query-gpu=clocks.sm,temperature.gpu,power.draw,utilization.gpu,memory.used --format=csv
  rigcheck monitor --count 2 --interval 0.5
  echo "== sampler cost"; python3 bench/sampler_cost.py 30 0.1
fi
if [[ $what == all || $what == default ]]; then
  echo "== default profile: probe verify matmul bandwidth training"
  start=$(date +%s.%N)
  rigcheck run probe verify matmul bandwidth training --device cuda:0 --json $OUT/default.json > $OUT/default.log 2>&1
  echo "rc=$? wall $(echo "$(date +%s.%N) - $start" | bc) s"
  grep -E "^  (PASS|WARN|FAIL|SKIP|CRASH|TIMEOUT)|^<" $OUT/default.log | cut -c1-220
  echo "== hostbugs"; rigcheck run hostbugs --device cuda:0 2>&1 | grep -E "^  (PASS|WARN|FAIL)|^<" | cut -c1-220
fi
if [[ $what == all || $what == bench ]]; then
  echo "== throughput vs plain"; python3 bench/throughput_vs_plain.py --json $OUT/bench.json 2>&1 | grep -v Warning
  echo "== hardware tests"; (cd tests && python3 -m pytest -q -m hardware -p no:cacheprovider 2>&1 | tail -2)
fi
