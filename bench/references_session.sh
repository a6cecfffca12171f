#!/usr/bin/env bash
# Issue 20, item 3, on the H200: the best-of and max-find verdicts cite the model reference, the default run
# judges each figure against it, and a baseline exported from that run judges the next run instead.
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
export RIGCHECK_STORE=$OUT/store.db PYTHONUNBUFFERED=1
show() {  # the reference-bearing verdicts of a --json report, one a line
  python3 - "$1" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
for v in report["verdicts"]:
    name = v["check_name"] or ""
    if name.startswith(("best-", "reference")) or name == "max-find":
        print(f"{v['status']:5} {v['device'] or '-':7} {name}: {v['explanation']}")
PY
}
rigcheck run matmul --max-find --profile quick --device cuda:0 --json $OUT/maxfind.json > $OUT/maxfind.out 2>&1
echo "== matmul --max-find --profile quick: rc=$?"; show $OUT/maxfind.json
rigcheck run --device cuda:0 --json $OUT/default.json > $OUT/default.out 2>&1
echo "== default run: rc=$?"; show $OUT/default.json
run_id=$(python3 -c "import json; print(json.load(open('$OUT/default.json'))['run']['id'])")
rigcheck export "$run_id" --format baseline -o $OUT/baseline.json; echo "== export --format baseline: rc=$?"
python3 -c "import json; f = json.load(open('$OUT/baseline.json'))['figures']; print(len(f), 'figures:', ', '.join(sorted(f)[:6]), '...')"
rigcheck run matmul --profile quick --device cuda:0 --baseline $OUT/baseline.json --json $OUT/against.json > $OUT/against.out 2>&1
echo "== matmul --profile quick --baseline: rc=$?"; show $OUT/against.json
