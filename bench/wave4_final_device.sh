#!/usr/bin/env bash
# Wave 4's last GPU check (2026-12-03, second session): the default run three times (wall time, verdicts, any
# figure verdict), then the training stage alone with its two clocks read as one instant (engine/stages/training.py)
# and a CPU training figure beside a burner on the host's own CPUs; every output lands in $OUT.
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
export PYTHONUNBUFFERED=1
for tag in final1 final2 final3; do
  export RIGCHECK_STORE=$OUT/store-$tag.db
  start=$(date +%s.%N)
  rigcheck run --device cuda:0 --json $OUT/default-$tag.json > $OUT/default-$tag.log 2>&1
  rc=$?
  echo "== $tag default run rc=$rc wall $(python3 -c "import time; print(round(time.time() - $start, 1))") s"
  if [ $tag = final1 ]; then python3 bench/summarize_wave4.py $OUT/default-$tag.json
  else python3 bench/summarize_wave4.py $OUT/default-$tag.json | grep -v "^  [a-z]"; fi
done
export RIGCHECK_STORE=$OUT/store-train.db
echo "== training on cuda:0 and on the CPU beside a burner pinned to the run's CPUs"
rigcheck run training --device cuda:0 > $OUT/train-gpu.log 2>&1; echo "gpu training rc=$?"
grep -E "PASS|WARN|FAIL|INCONCLUSIVE|NOT JUDGED|BROKEN" $OUT/train-gpu.log | cut -c1-240 | head -20
taskset -c 0-3 python3 -c "while True: pass" & b1=$!
taskset -c 0-3 python3 -c "while True: pass" & b2=$!
taskset -c 0-3 python3 -m rigcheck.tui.cli run training --device cpu > $OUT/train-cpu-busy.log 2>&1; echo "cpu training beside 2 burners rc=$?"  # (a shell function cannot be exec'd by taskset: rc 127 on 2026-12-03)
kill $b1 $b2
grep -E "PASS|WARN|FAIL|INCONCLUSIVE|NOT JUDGED|BROKEN" $OUT/train-cpu-busy.log | cut -c1-240 | head -20
