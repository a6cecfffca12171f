"""rigcheck's matmul figure at 4096 between plain loops written here, in one process: plain, rigcheck, plain.

Three plain loops, none sharing rigcheck's timing code:
- warm: one input set, back-to-back calls in 20 ms groups for about a second (what most people write;
  the operands can sit in L2, and the GPU reaches its sustained clock);
- cold: the same, with input sets rotated so together they exceed twice the L2, and the L2 overwritten
  before each group;
- burst: what rigcheck's figure says it measures: a 0.3 s pause, then 20 groups of about 2 ms, cold
  operands, the median group.
Run on the GPU machine: python3 bench/matmul_sandwich.py [DEVICE]
"""

from __future__ import annotations

import sys
import time

import torch
from rigcheck.engine.events import Measurement
from rigcheck.engine.stages.matmul.stage import measure_point

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
N = 4096


def plain(dtype: str, device: torch.device, cold: bool, seconds: float = 1.0, burst: bool = False) -> float:
    torch.backends.cuda.matmul.allow_tf32 = False
    l2 = torch.cuda.get_device_properties(device).L2_cache_size
    per_set = 2 * N * N * DTYPES[dtype].itemsize
    sets = max(1, min(8, -(-2 * l2 // per_set))) if cold else 1
    ins = [
        (torch.randn(N, N, device=device, dtype=DTYPES[dtype]), torch.randn(N, N, device=device, dtype=DTYPES[dtype]))
        for _ in range(sets)
    ]
    out = torch.empty(N, N, device=device, dtype=DTYPES[dtype])
    flush = torch.empty(2 * l2 // 4, device=device, dtype=torch.float32) if cold else None
    for a, b in ins * 3:
        torch.matmul(a, b, out=out)
    torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    torch.matmul(*ins[0], out=out)
    end.record()
    end.synchronize()
    per_call = start.elapsed_time(end) / 1000
    group = max(1, int((0.002 if burst else 0.02) / per_call))
    if burst:
        time.sleep(0.3)
    rates = []
    for g in range(20 if burst else max(5, int(seconds / (group * per_call)))):
        if flush is not None:
            flush.zero_()
        start.record()
        for i in range(group):
            a, b = ins[(g * group + i) % sets]
            torch.matmul(a, b, out=out)
        end.record()
        end.synchronize()
        rates.append(2.0 * N**3 * group / (start.elapsed_time(end) / 1000) / 1e12)
    return sorted(rates)[len(rates) // 2]


def rigcheck_figure(dtype: str, device: torch.device) -> float:
    name = torch.cuda.get_device_name(device)
    return next(e for e in measure_point(dtype, N, N, N, device, name) if isinstance(e, Measurement)).value


def main(device_name: str) -> None:
    device = torch.device(device_name)
    torch.cuda.set_device(device)
    print(f"{torch.cuda.get_device_name(device)} {device_name}, TFLOP/s at {N}")
    print("dtype  warm      cold      burst     rigcheck  burst     cold      warm     | rig/burst rig/cold rig/warm")
    for dtype in DTYPES:
        w1, c1, b1 = plain(dtype, device, False), plain(dtype, device, True), plain(dtype, device, True, burst=True)
        r = rigcheck_figure(dtype, device)
        b2, c2, w2 = plain(dtype, device, True, burst=True), plain(dtype, device, True), plain(dtype, device, False)
        burst, cold, warm = (b1 + b2) / 2, (c1 + c2) / 2, (w1 + w2) / 2
        print(
            f"{dtype:5s}  {w1:8.1f}  {c1:8.1f}  {b1:8.1f}  {r:8.1f}  {b2:8.1f}  {c2:8.1f}  {w2:8.1f} |"
            f"  {r / burst:6.3f}  {r / cold:6.3f}  {r / warm:6.3f}"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda:0")
