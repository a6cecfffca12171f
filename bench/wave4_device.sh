#!/usr/bin/env bash
# Wave 4 (issues 31-33) on the H200: a quiet default run (wall time, figures for the reference table, SUSPECT
# and INCONCLUSIVE counts) and the health paths' wall time; every output also lands in $OUT.
# Usage: bench/wave4_device.sh TAG   (TAG names the call: before, after1, ...)
set -u
cd "$(dirname "$0")/.."
source bench/devpath.sh
tag=${1:-run}
export RIGCHECK_STORE=$OUT/store-$tag.db PYTHONUNBUFFERED=1
echo "== $tag $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max --format=csv,noheader) torch $(python3 -c 'import torch; print(torch.__version__)')"
start=$(date +%s.%N)
rigcheck run --device cuda:0 --json $OUT/default-$tag.json > $OUT/default-$tag.log 2>&1
rc=$?
echo "default run rc=$rc wall $(python3 -c "import time; print(round(time.time() - $start, 1))") s"
python3 bench/summarize_wave4.py $OUT/default-$tag.json
for i in 1 2 3; do
  s=$(date +%s.%N); rigcheck run health --device cuda:0 > $OUT/health-$tag-$i.log 2>&1; r=$?
  echo "run health #$i rc=$r wall $(python3 -c "import time; print(round(time.time() - $s, 2))") s"
done
s=$(date +%s.%N); nvidia-smi -q > /dev/null; echo "nvidia-smi -q wall $(python3 -c "import time; print(round(time.time() - $s, 2))") s"
