#!/usr/bin/env bash
# Issue 20 items 1, 4, 6 on the GPU machine: a quiet burn at the board's default power limit has 0 SUSPECT
# (notes say "power-limited at 700 W"), a viewer (`rigcheck follow`) beside it is not contention, and on a
# 2-CPU affinity set one burner inside the set makes the CPU figures SUSPECT, naming the set.
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
export RIGCHECK_STORE=$OUT/store.db PYTHONUNBUFFERED=1
python3 - <<'PY'
from rigcheck.engine.telemetry.nvml import NvmlSource
s = NvmlSource(processes=False)
for i, _ in enumerate(s.handles):
    print(f"GPU {i}: enforced {s.limits[i]} W, default {s.default_limits[i]} W, max {s.max_limits[i]} W")
PY
rigcheck run burn --device cuda:0 --duration 60 --json $OUT/burn.json > $OUT/burn.out 2> $OUT/burn.err &
run=$!
sleep 15
rigcheck follow > $OUT/follow.out 2>&1 &  # a viewer beside the run: rigcheck's own, not contention
viewer=$!
wait $run; echo "burn 60 s: rc=$?"; kill $viewer 2> /dev/null
python3 bench/summarize_run.py $OUT/burn.json
python3 - "$OUT/burn.json" <<'PY'
import collections, json, sys
figures = json.load(open(sys.argv[1]))["measurements"]
trust = collections.Counter((m.get("conditions") or {}).get("trust") for m in figures)
print("burn trust:", dict(trust), "(want 0 SUSPECT)")
for m in figures[:3]:
    c = m.get("conditions") or {}
    print(f"  {m['name']}: {c.get('trust')} notes={c.get('notes')} limit={c.get('power_limit_w')}/"
          f"{c.get('power_default_limit_w')} W others={c.get('host_top_others')}")
PY
taskset -c 1 python3 -c "while True: pass" & burner=$!
taskset -c 0-1 python3 -m rigcheck.tui.cli run matmul --device cpu --profile quick --json $OUT/set.json \
  > $OUT/set.out 2> $OUT/set.err
echo "cpu matmul on CPUs 0-1 beside a burner on CPU 1: rc=$? (want SUSPECT naming rigcheck's 2 CPUs)"; kill $burner
python3 bench/summarize_run.py $OUT/set.json
