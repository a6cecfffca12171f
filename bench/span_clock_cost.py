"""What reading clocks at each figure's span start and end costs, against the figure's own time (issue 31 item 5:
under 1%). Times the four NVML reads alone, then bf16 matmuls from 256 to 8192 through time_grouped (the matmul
stage's own timing) with the span readings on; with a --json report, also every stored figure's own ratio."""

from __future__ import annotations

import json
import statistics
import sys
import time

import torch
from rigcheck.engine.hw.pci import torch_bus_id
from rigcheck.engine.stages.common import span_clocks
from rigcheck.engine.stages.common.timing import time_grouped
from rigcheck.engine.stages.matmul.calls import matmul_call


def main() -> int:
    device = torch.device("cuda:0")
    opened = time.perf_counter()
    reader = span_clocks.reader_for(torch_bus_id(torch.cuda.get_device_properties(device)))
    print(f"NVML opened and cuda:0 found in {1e3 * (time.perf_counter() - opened):.1f} ms (once per stage child)")
    if reader is None:
        print("no NVML reader for cuda:0: span clocks are off here")
        return 1
    probed = time.perf_counter()
    probe = span_clocks.probe_if_due(torch_bus_id(torch.cuda.get_device_properties(device)), reader)
    print(f"idle probe ({span_clocks.PROBE_S} s once a minute per stage child): {probe} in "
          f"{time.perf_counter() - probed:.2f} s")  # fmt: skip
    costs = []
    for _ in range(2000):
        begun = time.perf_counter()
        reader.read()
        costs.append(time.perf_counter() - begun)
    print(f"one reading (4 NVML calls): median {1e6 * statistics.median(costs):.1f} us, p99 "
          f"{1e6 * sorted(costs)[int(0.99 * len(costs))]:.1f} us; a span reads twice")  # fmt: skip
    print("size  TFLOP/s  span_ms  cost_us  cost/span   sm MHz start,end  reasons")
    worst = 0.0
    for size in (256, 512, 1024, 2048, 4096, 8192):
        call = matmul_call("bf16", size, size, size, device)
        stats = time_grouped([call], device)
        found = span_clocks.of(stats)
        if found is None:
            print(f"{size:5} no span readings")
            continue
        share = found["cost_s"] / found["span_s"]
        worst = max(worst, share)
        rate = 2.0 * size**3 / stats.median / 1e12
        print(f"{size:5} {rate:8.1f} {1e3 * found['span_s']:8.1f} {1e6 * found['cost_s']:8.1f} {share:9.3%}   "
              f"{found['sm_mhz']}  {found['reasons']}")  # fmt: skip
    for path in sys.argv[1:]:
        with open(path) as f:
            figures = json.load(f)["measurements"]
        shares = [
            (m["params"]["span_clocks"]["cost_s"] / m["params"]["span_clocks"]["span_s"], m["name"])
            for m in figures
            if (m.get("params") or {}).get("span_clocks") and m["params"]["span_clocks"]["span_s"]
        ]
        if shares:
            top = max(shares)
            worst = max(worst, top[0])
            print(f"{path}: {len(shares)} figures with span readings; highest cost {top[0]:.3%} ({top[1]})")
    print(f"worst cost against the figure's own span: {worst:.3%} ({'under' if worst < 0.01 else 'OVER'} 1%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
