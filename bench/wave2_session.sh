#!/usr/bin/env bash
# The second wave on the 2x H200 machine: health, every GPU at once against one GPU, links against a plain
# loop, a rival on cuda:1, the trust runs of issue 9 with process names, a 2-minute burn, the app mid-run.
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=$PYTHONPATH:/tmp/site RIGCHECK_STORE=$OUT/store.db PYTHONUNBUFFERED=1
S=bench/summarize_run.py
R="python3 -m rigcheck.tui.cli"  # not the shell function: `timeout` runs programs only
stages="probe health verify hostbugs matmul bandwidth training"
rival() {  # a second process doing bf16 matmuls on one GPU for $2 seconds
  python3 -c "
import torch, time
a = torch.randn(8192, 8192, device='$1', dtype=torch.bfloat16)
end = time.time() + $2
while time.time() < end:
    a @ a
" > /dev/null 2>&1 & echo $!  # its output must not hold the caller's \$(...) open
}
what=${1:-a}
if [[ $what == a ]]; then
  echo "== health"; timeout 120 $R run health --json $OUT/health.json > $OUT/health.out 2>&1; echo "rc=$?"
  grep -E "^\s*(PASS|WARN|FAIL|SKIP)" $OUT/health.out | cut -c1-230
  python3 -c "
import json; r = json.load(open('$OUT/health.json'))
for v in r['verdicts']: print(v['status'], v['device'], v['check_name'], '|', v['explanation'][:200])"
  for dev in cuda:0 all; do
    start=$(date +%s.%N)
    timeout 400 $R run $stages --device $dev --json $OUT/run-${dev/:/}.json > $OUT/run-${dev/:/}.out 2> $OUT/run-${dev/:/}.err
    echo "rigcheck run (7 stages) --device $dev: rc=$? wall $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
  done
  python3 $S $OUT/run-all.json | head -60
  grep -E "peers|speedup" $OUT/run-all.err $OUT/run-all.out | cut -c1-250 | head -20
  [[ ${2:-} == links ]] && { echo "== links"; timeout 400 bash bench/links_session.sh 2>&1 | tail -40; }
fi
if [[ $what == b ]]; then
  pid=$(rival cuda:1 120); sleep 5
  timeout 200 $R run matmul --device all --json $OUT/rival1.json > $OUT/rival1.out 2> $OUT/rival1.err
  echo "matmul on both GPUs, a rival on cuda:1: rc=$?"; kill $pid
  python3 -c "
import json; r = json.load(open('$OUT/rival1.json'))
for v in r['verdicts']:
    if v['check_name'].startswith('peers'): print(v['status'], v['device'], v['explanation'][:300])"
  n=$(nproc); pids=""
  for _ in $(seq "$n"); do python3 -c "while True: pass" & pids="$pids $!"; done
  sleep 2
  timeout 200 $R run training --device cuda:0 --json $OUT/burners.json > $OUT/burners.out 2> $OUT/burners.err
  echo "training beside $n CPU burners: rc=$?"; kill $pids
  python3 $S $OUT/burners.json | tail -30
  pid=$(rival cuda:0 120); sleep 5
  timeout 200 $R run matmul --device cuda:0 --json $OUT/rival0.json > $OUT/rival0.out 2> $OUT/rival0.err
  echo "matmul beside a rival on cuda:0: rc=$?"; kill $pid
  python3 $S $OUT/rival0.json | tail -18
  echo "== burn 120 s on both GPUs"
  timeout 400 $R run burn --device all --duration 120 --json $OUT/burn.json > $OUT/burn.out 2> $OUT/burn.err
  echo "rc=$?"
  python3 -c "
import json; r = json.load(open('$OUT/burn.json'))
for v in r['verdicts']: print(v['status'], v['device'], v['check_name'], '|', v['explanation'][:260])"

  echo "== the app mid-run at 120x40, both GPUs"
  timeout 120 python3 bench/tui_capture_pty.py $OUT 120 40 12:5 28:@ 38:@ 45:^q 46:y -- python3 -m rigcheck.tui.cli --profile quick 2>&1 | tail -45
fi
if [[ $what == rival ]]; then
  pid=$(rival cuda:1 90); sleep 8
  timeout 200 $R run matmul --device all --profile quick --json $OUT/rival1.json > $OUT/rival1.out 2> $OUT/rival1.err
  echo "matmul on both GPUs, a rival (pid $pid) on cuda:1: rc=$?"; kill $pid
  python3 -c "
import json; r = json.load(open('$OUT/rival1.json'))
for v in r['verdicts']:
    if v['check_name'].startswith('peers'): print(v['status'], v['device'], v['explanation'][:400])
for m in r['measurements']:
    print(m['device'], m['name'], round(m['value'], 1), m['conditions'].get('trust'), '; '.join(m['conditions'].get('trust_reasons', []))[:200])"
fi
if [[ $what == app ]]; then
  timeout 80 python3 bench/tui_capture_pty.py $OUT 120 40 10:5 24:@ 32:@ 36:^q 37:y -- python3 -m rigcheck.tui.cli --profile quick 2>&1 | tail -45
fi
if [[ $what == final ]]; then
  timeout 150 $R run matmul bandwidth --device all --profile quick --json $OUT/final.json > $OUT/final.out 2> $OUT/final.err
  echo "final code, matmul bandwidth on both GPUs at once: rc=$?"
  python3 $S $OUT/final.json 2>&1 | head -40
  timeout 60 $R run probe --device all --detach > $OUT/detach.out 2>&1; echo "run --detach: rc=$?"; cat $OUT/detach.out | head -5
  sleep 20; timeout 60 $R follow > $OUT/follow.out 2>&1; echo "follow: rc=$?"; tail -3 $OUT/follow.out; timeout 30 $R runs | head -5
fi
