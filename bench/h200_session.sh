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
  start=$(date +%s)
  rigcheck run probe verify matmul bandwidth training --device cuda:0 --json $OUT/default.json > $OUT/default.log 2>&1
  echo "rc=$? wall $(( $(date +%s) - start )) s"
  grep -E "^  (PASS|WARN|FAIL|SKIP|CRASH|TIMEOUT)|^<" $OUT/default.log | cut -c1-220
  echo "== hostbugs"; rigcheck run hostbugs --device cuda:0 2>&1 | grep -E "^  (PASS|WARN|FAIL)|^<" | cut -c1-220
fi
if [[ $what == all || $what == tui ]]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=$PYTHONPATH:/tmp/site
  echo "== the app under a terminal while the default sweep runs (a = run all, cuda:0, standard)"
  if command -v tmux >/dev/null; then
    tmux new-session -d -s rc -x 120 -y 40 "python3 -m rigcheck.tui.cli --device cuda:0; echo EXIT \$? > $OUT/app-exit"
    sleep 4; tmux send-keys -t rc a
    for at in 25 60 95; do sleep $((at - ${last:-4})); last=$at; tmux capture-pane -p -t rc > $OUT/screen-$at.txt; done
    tmux send-keys -t rc C-q; sleep 1; tmux send-keys -t rc y; sleep 3; cat $OUT/screen-60.txt
  else
    echo "(no tmux here: a pseudo-terminal and pyte stand in)"
    python3 bench/tui_capture_pty.py $OUT 120 40 4:a 25:@ 60:@ 95:@ 100:^q 101:y -- python3 -m rigcheck.tui.cli --device cuda:0 | sed -n '/screen at 6/,/screen at 9/p'
  fi
  echo "== app cost"; python3 bench/tui_perf.py 20
fi
if [[ $what == verify ]]; then
  echo "== verify"; rigcheck run verify --device cuda:0 2>&1 | grep -E "^  (PASS|WARN|FAIL|SKIP|CRASH)|^<" | cut -c1-220
fi
if [[ $what == all || $what == bench ]]; then
  echo "== throughput vs plain"; python3 bench/throughput_vs_plain.py --json $OUT/bench.json 2>&1 | grep -v Warning
  echo "== hardware tests"; (cd tests && python3 -m pytest -q -p no:cacheprovider test_hardware.py 2>&1 | tail -3)
fi
