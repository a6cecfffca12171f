"""Where a per-call timing loses against a back-to-back loop: the L2 flush, the busy-wait, the events.

Run on the GPU machine: python bench/timing_methods.py
"""

from __future__ import annotations

import statistics
import time

import torch
from rigcheck.engine.stages.matmul.calls import matmul_call

DEVICE = torch.device("cuda:0")


def per_call(call, flush: bool, sleep: bool, reps: int = 100) -> float:  # type: ignore[no-untyped-def]
    l2 = torch.cuda.get_device_properties(DEVICE).L2_cache_size
    cache = torch.empty(2 * l2 // 4, device=DEVICE)
    times = []
    for _ in range(reps):
        if flush:
            cache.zero_()
        if sleep:
            torch.cuda._sleep(120_000)
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        call()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / 1000)
    return statistics.median(times)


def grouped(calls, reps: int = 20, group: int = 10) -> float:  # type: ignore[no-untyped-def]
    times = []
    for r in range(reps):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for i in range(group):
            calls[(r * group + i) % len(calls)]()
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / 1000 / group)
    return statistics.median(times)


def main() -> None:
    for dtype, n in (("bf16", 4096), ("fp16", 4096), ("bf16", 8192)):
        call = matmul_call(dtype, n, n, n, DEVICE)
        rotation = [matmul_call(dtype, n, n, n, DEVICE) for _ in range(6)]
        for _ in range(20):
            call()
        torch.cuda.synchronize()
        flops = 2.0 * n**3
        rows = [
            ("events, no flush", per_call, (call, False, False)),
            ("events + flush", per_call, (call, True, False)),
            ("events + flush + busy-wait", per_call, (call, True, True)),
            ("events + busy-wait", per_call, (call, False, True)),
            ("group of 10, same inputs", grouped, ([call],)),
            ("group of 10, 6 input sets", grouped, (rotation,)),
        ]
        for name, method, args in rows:
            time.sleep(0.3)
            seconds = method(*args)
            print(f"{dtype} {n} {name:<28} {flops / seconds / 1e12:7.1f} TFLOP/s")


if __name__ == "__main__":
    main()
