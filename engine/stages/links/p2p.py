"""Peer-to-peer copy bandwidth between every pair of GPUs, one way and both ways, with the data checked.

A copy between devices runs on the source device's current stream (ATen's Copy.cu), so its events
are recorded there, inside `torch.cuda.device(src)`; events on another device's stream gave figures
100x wrong. The wall clock is read around every timed interval as the second clock.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import torch
from rigcheck.engine.events import Event, Measurement
from rigcheck.engine.measure.busbw import size_label
from rigcheck.engine.measure.stats import TimingStats
from rigcheck.engine.stages.common.figures import checked, device_identity
from rigcheck.engine.stages.common.limits import device_copy_limit
from rigcheck.engine.stages.common.timing import BENCHMARK_VERSION

STAGE = "links"
PATTERN = 251  # elements cycle through 0..250: a misplaced or missing chunk cannot match


def pattern(numel: int, device: torch.device, offset: int) -> torch.Tensor:
    return ((torch.arange(numel, dtype=torch.int64, device=device) + offset) % PATTERN).float()


def wrong_after(copy: Callable[[], object], dst: torch.Tensor, offset: int) -> int:
    """Poison the destination, copy once, and count elements that differ from the source's pattern."""
    dst.fill_(float("nan"))
    copy()
    if dst.device.type == "cuda":
        torch.cuda.synchronize(dst.device)
    return int((dst != pattern(dst.numel(), dst.device, offset)).sum().item())


def time_interval(enqueue: Callable[[], object], stream: torch.cuda.Stream, reps: int) -> TimingStats:
    """Events on `stream` around each call, synchronised each time, the wall clock around the same span."""
    pairs = []
    for _ in range(reps):
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        wall0 = time.perf_counter()
        begin.record(stream)
        enqueue()
        end.record(stream)
        end.synchronize()
        pairs.append((begin.elapsed_time(end) / 1e3, time.perf_counter() - wall0))
    return TimingStats(tuple(p for p, _ in pairs), tuple(w for _, w in pairs))


def one_way(src_dev: torch.device, dst_dev: torch.device, numel: int, reps: int) -> tuple[TimingStats, int]:
    src = pattern(numel, src_dev, src_dev.index or 0)
    dst = torch.empty(numel, dtype=torch.float32, device=dst_dev)
    with torch.cuda.device(src_dev):
        stream = torch.cuda.current_stream(src_dev)
        wrong = wrong_after(lambda: dst.copy_(src), dst, src_dev.index or 0)
        for _ in range(2):
            dst.copy_(src)
        stats = time_interval(lambda: dst.copy_(src), stream, reps)
    return stats, wrong


def both_ways(a: torch.device, b: torch.device, numel: int, reps: int) -> tuple[TimingStats, int]:
    """a->b on a side stream of a and b->a on a side stream of b at once, timed on a's stream.

    Side streams keep ATen's cross-device barriers (which wait on each device's *current* stream)
    from ordering one copy after the other.
    """
    src_a, src_b = pattern(numel, a, a.index or 0), pattern(numel, b, b.index or 0)
    dst_b, dst_a = torch.empty_like(src_a, device=b), torch.empty_like(src_b, device=a)
    stream_a, stream_b = torch.cuda.Stream(a), torch.cuda.Stream(b)

    def enqueue() -> None:
        start = torch.cuda.Event()
        start.record(stream_a)
        stream_b.wait_event(start)
        with torch.cuda.stream(stream_a):
            dst_b.copy_(src_a)
        with torch.cuda.stream(stream_b):
            dst_a.copy_(src_b)
        done_b = torch.cuda.Event()
        done_b.record(stream_b)
        stream_a.wait_event(done_b)

    def once() -> None:
        enqueue()
        torch.cuda.synchronize(a)
        torch.cuda.synchronize(b)

    dst_a.fill_(float("nan"))
    wrong = wrong_after(once, dst_b, a.index or 0) + int((dst_a != pattern(numel, a, b.index or 0)).sum().item())
    with torch.cuda.device(a):
        enqueue()
        stats = time_interval(enqueue, stream_a, reps)
    return stats, wrong


def figure(
    name: str,
    pair: tuple[torch.device, torch.device],
    stats: TimingStats,
    moved: float,
    extra: dict[str, Any],
    started: float,
) -> list[Event]:
    src, dst = pair
    median, best, spread = (v / 1e9 for v in stats.rate(moved))
    params = {
        "src": str(src),
        "dst": str(dst),
        "bytes": moved,
        "best": best,
        "benchmark_version": BENCHMARK_VERSION,
        **device_identity(src),
        **extra,
    }
    result = Measurement(STAGE, name, median, "GB/s", spread, len(stats.times), str(src), params, t_start=started)
    return list(checked(result, stats, device_copy_limit(src)))


def p2p_pairs(devices: list[torch.device], numel: int, reps: int) -> Iterator[tuple[str, Any]]:
    """('figure', events) per measured pair, ('no-peer', (src, dst)) per pair without peer access,
    ('wrong', (label, count)) per copy whose data did not arrive intact. One way for every ordered
    pair; both ways at once for every unordered pair with peer access in both directions."""
    label = size_label(numel * 4)
    for src in devices:
        for dst in devices:
            if src == dst:
                continue
            if not torch.cuda.can_device_access_peer(src, dst):
                yield "no-peer", (src, dst)
                continue
            started = time.time()
            stats, wrong = one_way(src, dst, numel, reps)
            extra = {"direction": "one-way", "wrong": wrong}
            yield "figure", figure(f"p2p {src}->{dst} {label}", (src, dst), stats, numel * 4.0, extra, started)
            if wrong:
                yield "wrong", (f"{src}->{dst}", wrong)
            torch.cuda.empty_cache()
    for i, a in enumerate(devices):
        for b in devices[i + 1 :]:
            if not (torch.cuda.can_device_access_peer(a, b) and torch.cuda.can_device_access_peer(b, a)):
                continue
            started = time.time()
            stats, wrong = both_ways(a, b, numel, reps)
            extra = {"direction": "both", "wrong": wrong}
            yield "figure", figure(f"p2p {a}<->{b} {label}", (a, b), stats, 2.0 * numel * 4, extra, started)
            if wrong:
                yield "wrong", (f"{a}<->{b}", wrong)
            torch.cuda.empty_cache()
