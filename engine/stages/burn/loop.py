"""One device's burn: the same matrix product over and over, timed on the device, each checked result
compared with the first one (as gpu-burn does), reported interval by interval through a queue.
"""

from __future__ import annotations

import hashlib
import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from rigcheck.engine.stages.common.device_timer import DeviceTimer

BATCH_S = 0.05  # work enqueued between two looks at the stop flag
COPY_SLICE = 2 * 2**30  # bytes of memory traffic per batch
WRONG_ELEMENTS = 13  # how many elements the wrong@N test fault corrupts


@dataclass(frozen=True)
class BurnSettings:
    duration_s: float
    interval_s: float
    n: int
    dtype: torch.dtype
    check_every: int  # iterations between two comparisons with the first result
    copy_bytes: int = 0  # memory traffic: a buffer this size copied slice by slice (0: none)
    fault: str = (
        ""  # for tests: "wrong@N" corrupts the result of iteration N; "slow@F" quarters the rate after F of the time
    )


@dataclass(frozen=True)
class Interval:
    """One interval of one device: its rate, and every check that found wrong elements."""

    device: str
    index: int
    t_start: float
    t_end: float
    iterations: int
    seconds: float  # device time of the matrix products
    wall_s: float
    tflops: float
    copy_gb_s: float | None = None
    wrong: list[tuple[int, int]] = field(default_factory=list)  # (iteration, wrong elements)
    copy_wrong: list[tuple[int, int]] = field(default_factory=list)
    checks: int = 0
    first_iteration: int = 0
    timer: str = "device events"


@dataclass(frozen=True)
class Started:
    device: str
    name: str
    digest: str  # of the first result, to compare GPUs doing the same work
    n: int
    dtype: str


@dataclass(frozen=True)
class Failed:
    device: str
    error: str


def inputs(n: int, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The same two matrices on every device: made on the CPU from a fixed seed, then copied."""
    generator = torch.Generator().manual_seed(20261130)
    a = torch.randn(n, n, generator=generator).to(dtype)
    b = torch.randn(n, n, generator=generator).to(dtype)
    return a.to(device), b.to(device)


def digest(tensor: torch.Tensor) -> str:
    raw = tensor.detach().contiguous().view(torch.uint8) if tensor.dtype != torch.uint8 else tensor
    return hashlib.sha256(raw.cpu().numpy().tobytes()).hexdigest()[:16]


def _corrupt(c: torch.Tensor) -> None:
    flat = c.view(-1)
    step = max(1, flat.numel() // WRONG_ELEMENTS)
    flat[::step][:WRONG_ELEMENTS] += 1000.0


class DeviceBurn:
    def __init__(self, device: torch.device, settings: BurnSettings, out: queue.Queue[Any], stop: threading.Event):
        self.device, self.settings, self.out, self.stop = device, settings, out, stop
        self.timer = DeviceTimer(device)
        self.iteration = 0
        self.offset = 0

    def run(self) -> None:
        try:
            with self.timer.active():
                self._run()
        except Exception as error:  # a GPU that errors out mid-burn is a result, not a crash of the stage
            self.out.put(Failed(str(self.device), f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"))

    def _run(self) -> None:
        s, device = self.settings, self.device
        a, b = inputs(s.n, s.dtype, device)
        reference = torch.empty(s.n, s.n, dtype=s.dtype, device=device)
        torch.matmul(a, b, out=reference)  # the very call the loop repeats, so a healthy device repeats it bit for bit
        c = torch.empty_like(reference)
        src = dst = None
        if s.copy_bytes:
            src = torch.randint(-(2**31), 2**31 - 1, (s.copy_bytes // 4,), dtype=torch.int32, device=device)
            dst = torch.empty_like(src)
        if device.type == "cuda":
            props = torch.cuda.get_device_properties(device)
            name = f"{props.name} ({props.multi_processor_count} SMs)"
        else:
            name = "CPU"
        self.out.put(Started(str(device), name, digest(reference), s.n, str(s.dtype).removeprefix("torch.")))
        per_batch = self._batch_size(a, b, c)
        started = time.time()
        index = 0
        while not self.stop.is_set() and time.time() - started < s.duration_s:
            interval = self._interval(index, a, b, c, reference, src, dst, per_batch, started)
            if interval is not None:
                self.out.put(interval)
            index += 1

    def _batch_size(self, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> int:
        """Iterations per batch, from a timed warm-up: about BATCH_S of work, a multiple of check_every."""
        first = self.timer.mark()
        for _ in range(3):
            torch.matmul(a, b, out=c)
        last = self.timer.mark()
        self.timer.wait(last)
        each = max(self.timer.seconds(first, last) / 3, 1e-6)
        every = self.settings.check_every
        return max(every, round(BATCH_S / each / every) * every)

    def _interval(
        self, index: int, a: Any, b: Any, c: Any, reference: Any, src: Any, dst: Any, per_batch: int, started: float
    ) -> Interval | None:
        s = self.settings
        t_start, first_iteration = time.time(), self.iteration
        until = min(t_start + s.interval_s, started + s.duration_s)
        begin = self.timer.mark()
        checks: list[tuple[int, Any]] = []
        copy_checks: list[tuple[int, Any]] = []
        copies: list[tuple[Any, Any, int]] = []
        previous = None
        while not self.stop.is_set() and time.time() < until:
            t_batch = time.perf_counter()
            for _ in range(per_batch):
                torch.matmul(a, b, out=c)
                self.iteration += 1
                if s.fault == f"wrong@{self.iteration}":
                    _corrupt(c)
                if self.iteration % s.check_every == 0:
                    checks.append((self.iteration, (c != reference).sum()))
            if src is not None:  # one slice per batch, rotating, so every interval sweeps the whole buffer
                piece = slice(self.offset, self.offset + COPY_SLICE // 4)
                self.offset = 0 if piece.stop >= src.numel() else piece.stop
                copy_start = self.timer.mark()
                dst[piece].copy_(src[piece])
                copies.append((copy_start, self.timer.mark(), dst[piece].numel() * 4))
                copy_checks.append((self.iteration, (dst[piece] != src[piece]).sum()))
            done = self.timer.mark()
            if previous is not None:
                self.timer.wait(previous)  # two batches in flight: the device never waits for the host
            previous = done
            if s.fault.startswith("slow@") and time.time() - started > float(s.fault[5:]) * s.duration_s:
                self.timer.wait(done)
                time.sleep(3 * (time.perf_counter() - t_batch))  # the rate falls to a quarter from here on
        end = self.timer.mark()
        self.timer.wait(end)
        wall = time.time() - t_start
        total = self.timer.seconds(begin, end)
        copy_s = sum(self.timer.seconds(x, y) for x, y, _ in copies)
        copied = sum(size for _, _, size in copies)
        timer = "device events"
        if total < 0.5 * wall:  # events that time nothing: fall back on the wall clock, and say so
            total, timer = wall, "wall clock (device events disagreed)"
        iterations = self.iteration - first_iteration
        if iterations == 0:
            return None
        compute_s = max(total - copy_s, 1e-9)
        return Interval(
            device=str(self.device),
            index=index,
            t_start=t_start,
            t_end=time.time(),
            iterations=iterations,
            seconds=compute_s,
            wall_s=wall,
            tflops=2.0 * s.n**3 * iterations / compute_s / 1e12,
            copy_gb_s=2.0 * copied / copy_s / 1e9 if copies and copy_s > 0 else None,  # bytes read plus written
            wrong=_nonzero(checks),
            copy_wrong=_nonzero(copy_checks),
            checks=len(checks) + len(copy_checks),
            first_iteration=first_iteration + 1,
            timer=timer,
        )


def _nonzero(checks: list[tuple[int, Any]]) -> list[tuple[int, int]]:
    if not checks:
        return []
    counts = torch.stack([count for _, count in checks]).cpu().tolist()
    return [(iteration, int(n)) for (iteration, _), n in zip(checks, counts, strict=True) if n]
