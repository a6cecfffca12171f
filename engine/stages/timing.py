"""Timing on a device the way METHOD.md asks: warm-up, device events, an L2-sized flush before each timed call."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch

from ..stats import TimingStats

BENCHMARK_VERSION = "rigcheck-bench-1"


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def l2_flush_buffer(device: torch.device) -> torch.Tensor | None:
    """A buffer twice the L2 size, zeroed before each timed call so inputs do not sit in cache."""
    if device.type != "cuda":
        return None
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * 2**20
    return torch.empty(2 * l2 // 4, dtype=torch.float32, device=device)


def time_calls(
    call: Callable[[], Any],
    device: torch.device,
    min_reps: int = 10,
    min_seconds: float = 0.2,
    max_reps: int = 200,
    warmup: int = 3,
    flush: bool = True,
) -> TimingStats:
    """Time `call` many times; seconds per call. Device events on a GPU, perf_counter on the CPU."""
    warm_start = time.perf_counter()
    done = 0
    while done < warmup or time.perf_counter() - warm_start < 0.05:  # thread pools and clocks spin up
        call()
        done += 1
        if done % 10 == 0:
            synchronize(device)
    synchronize(device)
    cache = l2_flush_buffer(device) if flush else None
    times: list[float] = []
    started = time.perf_counter()
    while len(times) < max_reps and (len(times) < min_reps or time.perf_counter() - started < min_seconds):
        if device.type == "cuda":
            if cache is not None:
                cache.zero_()  # also keeps the GPU busy while the timed call is enqueued: no idle gap
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            call()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end) / 1000.0)
        else:
            t0 = time.perf_counter()
            call()
            times.append(time.perf_counter() - t0)
    return TimingStats(tuple(times))


def time_grouped(
    calls: list[Callable[[], Any]], device: torch.device, groups: int = 20, group_seconds: float = 0.002
) -> TimingStats:
    """Seconds per call on a GPU, from groups of back-to-back calls between two events.

    The L2 buffer is cleared before each group, and the calls rotate over input sets that together
    exceed the L2, so no call finds its operands in cache; back-to-back launches leave no idle gap
    between calls, which per-call events do for kernels of a fraction of a millisecond.
    """
    for call in calls * 3:
        call()
    synchronize(device)
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    begin.record()
    calls[0]()
    end.record()
    end.synchronize()
    per_call = max(begin.elapsed_time(end) / 1000.0, 1e-6)
    size = max(1, min(50, round(group_seconds / per_call)))
    cache = l2_flush_buffer(device)
    times: list[float] = []
    index = 0
    for _ in range(groups):
        if cache is not None:
            cache.zero_()
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(size):
            calls[index % len(calls)]()
            index += 1
        end.record()
        end.synchronize()
        times.append(begin.elapsed_time(end) / 1000.0 / size)
    return TimingStats(tuple(times))
