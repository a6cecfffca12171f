#!/usr/bin/env bash
# Wave 5's first GPU call (2026-12-07): main as it landed, on whichever GPU is lent: the device's facts for the
# architecture expectations (SMs, clocks, memory bus), one default and one quick run (wall time, per-stage time,
# figures judged), and `rigcheck references`; every output lands in $OUT.
set -u
cd "$(dirname "$0")/.."
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
source bench/devpath.sh
export PYTHONUNBUFFERED=1
date -u; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem,memory.total,pcie.link.gen.max,pcie.link.width.max --format=csv
python3 - <<'PY'
import torch, pynvml
p = torch.cuda.get_device_properties(0)
print("torch", torch.__version__, "cuda", torch.version.cuda, "cc", p.major, p.minor, "SMs", p.multi_processor_count,
      "L2", p.L2_cache_size, "mem", p.total_memory, "name", p.name)
pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0)
for what, call in [("bus width bits", lambda: pynvml.nvmlDeviceGetMemoryBusWidth(h)),
                   ("max mem clock MHz", lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_MEM)),
                   ("max sm clock MHz", lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)),
                   ("power limit mW", lambda: pynvml.nvmlDeviceGetEnforcedPowerLimit(h)),
                   ("pci", lambda: pynvml.nvmlDeviceGetPciInfo(h).busId)]:
    try: print(what, call())
    except Exception as e: print(what, "error", e)
PY
for profile in default quick; do
  export RIGCHECK_STORE=$OUT/store-$profile.db
  extra=""; [ $profile = quick ] && extra="--profile quick"
  start=$(date +%s.%N)
  rigcheck run --device cuda:0 $extra --json $OUT/$profile.json > $OUT/$profile.log 2>&1
  rc=$?
  echo "== $profile rc=$rc wall $(python3 -c "import time; print(round(time.time() - $start, 1))") s"
  tail -4 $OUT/$profile.log
  python3 bench/summarize_wave4.py $OUT/$profile.json | cut -c1-220
  python3 - $OUT/$profile.json <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for s in r.get("stages", []):
    print(f"  stage {s['name']:10s} {s['status']:12s} {s['finished'] - s['started']:.1f} s" if s.get("finished") else f"  stage {s['name']} {s['status']}")
PY
done
rigcheck references > $OUT/references.txt 2>&1; head -40 $OUT/references.txt
