#!/usr/bin/env bash
# The one-minute bring-up (issue 23): the default run cold (a fresh interpreter per stage, as before) and
# warm (one warm child), the quick profile, and the matmul sandwich three times; per-stage seconds.
set -u
source bench/devpath.sh
export PYTHONUNBUFFERED=1
LOGS=${LOGS:-$(mktemp -d)}  # the runs' own output: only its tail is shown, where a run failed
STORE=${STORE:-$OUT/store.db}
for tag in ${TAGS:-cold warm quick}; do
    case $tag in
        cold*) extra="--cold" ;;
        warm*) extra="" ;;
        quick*) extra="--profile quick" ;;
    esac
    start=$(date +%s.%N)
    RIGCHECK_STORE=$STORE rigcheck run --device ${DEVICE:-cuda:0} $extra --json $OUT/$tag.json > $LOGS/$tag.log 2>&1
    rc=$?
    echo "$tag: rc=$rc wall $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s" | tee -a $OUT/walls.txt
    [ $rc -le 1 ] || tail -20 $LOGS/$tag.log
done
python3 bench/bringup_times.py $(for t in ${TAGS:-cold warm quick}; do echo $OUT/$t.json; done)
python3 bench/summarize_run.py $OUT/warm.json | grep -E "train|==" | head -30
python3 bench/summarize_run.py $OUT/warm.json | grep "^  " | head -20
[ -n "${NO_SANDWICH:-}" ] || for i in 1 2 3; do python3 bench/matmul_sandwich.py ${DEVICE:-cuda:0}; done
# what a run pays outside its stages: the CLI's own imports, and the preflight's `import torch`
for what in "import rigcheck.tui.cli, rigcheck.engine.run.options" "import torch; torch.cuda.device_count()"; do
    start=$(date +%s.%N); python3 -c "$what"; echo "$what: $(python3 -c "print(round($(date +%s.%N) - $start, 2))") s"
done
for t in ${TAGS:-cold warm quick}; do
    python3 -c "
import json; r = json.load(open('$OUT/$t.json'))['run']; print('$t: run in store', round(r['finished'] - r['started'], 1), 's')"
done
cat $OUT/walls.txt
python3 bench/timeline.py $STORE --min-gap 0.3 > $OUT/timeline.txt
