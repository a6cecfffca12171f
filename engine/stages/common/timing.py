"""Timing on a device the way METHOD.md asks: warm-up, device events on the measured device's own
stream, an L2-sized flush before each timed group, and a second clock around every timed interval."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
from rigcheck.engine.hw.pci import torch_bus_id
from rigcheck.engine.measure.repeats import enough
from rigcheck.engine.measure.stats import LAUNCH_BOUND_S, TimingStats
from rigcheck.engine.stages.common import span_clocks

BENCHMARK_VERSION = "rigcheck-bench-2"
CHECK_CLOCK = "CLOCK_REALTIME"


def check_clock() -> float:
    """The CPU figures' second clock: the wall clock (CLOCK_REALTIME), outside the monotonic family that
    perf_counter reads, so a fault that slows or speeds that family shows as two clocks that disagree.
    NTP may step it; `TimingStats` sets aside the timings a step fell in."""
    return time.clock_gettime(time.CLOCK_REALTIME)


PAIR_READ_S = 200e-6  # perf_counter read twice around the check clock further apart than this: preempted between


def both_clocks(tries: int = 5, perf: Callable[[], float] = time.perf_counter) -> tuple[float, float]:
    """perf_counter and the check clock as of one instant, for a span compared whole by the two. A thread
    preempted between the two reads (a scheduler slice, milliseconds on a busy host) would skew the span by as
    much, and a training figure of a second then read as two clocks that disagree; such a read is taken again."""
    for _ in range(tries):
        before = perf()
        check = check_clock()
        after = perf()
        if after - before <= PAIR_READ_S:
            break
    return (before + after) / 2, check


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@contextlib.contextmanager
def on_device(device: torch.device) -> Iterator[None]:
    """Make `device` current: events, streams and allocations without a device then belong to it.

    `torch.cuda.Event().record()` records on the *current* device's stream; timing cuda:1 while
    cuda:0 is current gave near-zero times (6,554 TFLOP/s fp32 on an H200).
    """
    if device.type == "cuda":
        with torch.cuda.device(device):
            yield
    else:
        yield


def span_reader(device: torch.device) -> tuple[span_clocks.SpanReader | None, dict[str, Any] | None]:
    """The reader of this GPU's clocks for its figures' spans, and the latest idle probe of it: made now where
    one is due, so call it with nothing of ours running on the device (after a synchronize), before warm-up."""
    if device.type != "cuda":
        return None, None
    address = torch_bus_id(torch.cuda.get_device_properties(device))
    reader = span_clocks.reader_for(address)
    return reader, span_clocks.probe_if_due(address, reader)


def l2_flush_buffer(device: torch.device) -> torch.Tensor | None:
    """A buffer twice the L2 size, zeroed before each timed call so inputs do not sit in cache."""
    if device.type != "cuda":
        return None
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * 2**20
    return torch.empty(2 * l2 // 4, dtype=torch.float32, device=device)


class DeviceTimer:
    """Times one interval on `device`'s current stream by its events, and by the wall clock around it."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.stream = torch.cuda.current_stream(device)

    @contextlib.contextmanager
    def interval(self, out: list[tuple[float, float]]) -> Iterator[None]:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        wall0 = time.perf_counter()
        begin.record(self.stream)
        yield
        end.record(self.stream)
        end.synchronize()
        out.append((begin.elapsed_time(end) / 1000.0, time.perf_counter() - wall0))


def time_calls(
    call: Callable[[], Any],
    device: torch.device,
    min_reps: int = 10,
    min_seconds: float = 0.2,
    max_reps: int = 200,
    warmup: int = 3,
    flush: bool = True,
    settle: bool = False,
    max_seconds: float = 3.0,
) -> TimingStats:
    """Time `call` many times; seconds per call. Device events on a GPU (checked by the wall clock),
    perf_counter on the CPU (checked by CLOCK_REALTIME). `settle`: past `min_reps` and `min_seconds`, stop
    once the last `min_reps` calls agree (engine/measure/repeats.py), else go on to `max_seconds`."""
    with on_device(device):
        synchronize(device)
        reader, probe = span_reader(device)
        warm_start = time.perf_counter()
        done = 0
        while done < warmup or time.perf_counter() - warm_start < 0.05:  # thread pools and clocks spin up
            call()
            done += 1
            if done % 10 == 0:
                synchronize(device)
        synchronize(device)
        cache = l2_flush_buffer(device) if flush else None
        pairs: list[tuple[float, float]] = []
        timer = DeviceTimer(device) if device.type == "cuda" else None
        clocks = span_clocks.Span(reader, probe)
        started = time.perf_counter()
        while len(pairs) < max_reps and not _done(
            pairs, time.perf_counter() - started, min_reps, min_seconds, settle, max_seconds
        ):
            if timer is not None:
                if cache is not None:
                    cache.zero_()  # also keeps the GPU busy while the timed call is enqueued: no idle gap
                with timer.interval(pairs):
                    call()
            else:
                t0, r0 = time.perf_counter(), check_clock()
                call()
                pairs.append((time.perf_counter() - t0, check_clock() - r0))
        clocks.finish()
    primary, check = ("events", "wall clock") if timer is not None else ("perf_counter", CHECK_CLOCK)
    stats = TimingStats(tuple(p for p, _ in pairs), tuple(c for _, c in pairs), primary, check)
    return span_clocks.record(stats, clocks)


def _done(
    pairs: list[tuple[float, float]],
    elapsed_s: float,
    min_reps: int,
    min_seconds: float,
    settle: bool,
    max_seconds: float,
) -> bool:
    """Past the floors; and, where the repeats are sized by their spread, agreeing or past the ceiling."""
    if not settle:
        return len(pairs) >= min_reps and elapsed_s >= min_seconds
    return enough([p for p, _ in pairs[-min_reps:]], elapsed_s, min_reps, min_seconds, max_seconds)  # it reads those


def group_size(per_call_s: float, group_seconds: float) -> int:
    """Calls per timed group: up to 50 for real kernels (a short burst, so a power cap reached by earlier
    points does not lower later ones); up to 400 for launch-bound calls, whose time is mostly host
    overhead and needs a longer group to be stable."""
    cap = 400 if per_call_s < LAUNCH_BOUND_S else 50
    return max(1, min(cap, round(group_seconds / per_call_s)))


def time_grouped(
    calls: list[Callable[[], Any]], device: torch.device, groups: int = 20, group_seconds: float = 0.002
) -> TimingStats:
    """Seconds per call on a GPU, from groups of back-to-back calls between two events.

    The L2 buffer is cleared before each group, and the calls rotate over input sets that together
    exceed the L2, so no call finds its operands in cache; back-to-back launches leave no idle gap
    between calls, which per-call events do for kernels of a fraction of a millisecond.
    """
    with on_device(device):
        synchronize(device)
        reader, probe = span_reader(device)
        for call in calls * 3:
            call()
        synchronize(device)
        timer = DeviceTimer(device)
        first: list[tuple[float, float]] = []
        with timer.interval(first):
            calls[0]()
        size = group_size(max(first[0][0], 1e-6), group_seconds)
        cache = l2_flush_buffer(device)
        pairs: list[tuple[float, float]] = []
        index = 0
        clocks = span_clocks.Span(reader, probe)
        for _ in range(groups):
            if cache is not None:
                cache.zero_()
            with timer.interval(pairs):
                for _ in range(size):
                    calls[index % len(calls)]()
                    index += 1
        clocks.finish()
    stats = TimingStats(tuple(p / size for p, _ in pairs), tuple(c / size for _, c in pairs), calls_per_timing=size)
    return span_clocks.record(stats, clocks)
