"""Noise measured again, not reported as a fault (issue 41, item 4): before the first timed figure the GPU is
brought to its working clock (an idle H100 at 345 MHz ramped through the 1024 sizes, which came out NOISY), and
a figure that comes out noisy is measured once more; one that stays noisy is labelled NOISY with its spreads.

Standard library and rigcheck's NVML binding only; the work to run and the clock to read are passed in.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Measurement
from rigcheck.engine.hw import nvml
from rigcheck.engine.hw.gpu_at import gpu_at

WARM_LIMIT_S = 3.0  # the longest the GPU is kept busy to bring it to its working clock
WARM_MIN_S = 0.3  # at least this long, clock or not
NO_CLOCK_S = 1.0  # where the clock cannot be read, this long
STEADY_READS = 3  # consecutive reads within STEADY_SHARE of each other: the clock has settled
STEADY_SHARE = 0.03
NEAR_MAX = 0.9  # or at this share of the maximum clock
Clock = Callable[[], tuple[int | None, int | None]]  # (SM clock now, its maximum), MHz


@dataclass(frozen=True)
class Warmed:
    seconds: float
    clocks: tuple[int, ...]  # the SM clock read after each turn of work, MHz
    steady: bool | None  # None: the clock could not be read

    def words(self) -> str:
        if self.steady is None:
            return f"GPU kept busy {self.seconds:.1f} s before the first figure (its clock could not be read)"
        first, last = (self.clocks[0], self.clocks[-1]) if self.clocks else (0, 0)
        state = "steady" if self.steady else f"still moving after {WARM_LIMIT_S:g} s"
        return f"GPU brought to its working clock in {self.seconds:.1f} s ({first} to {last} MHz, {state})"


def settled(clocks: list[int], top: int | None) -> bool:
    """The clock is at its working level: near its maximum, or its last reads within a few percent."""
    if not clocks:
        return False
    if top and clocks[-1] >= NEAR_MAX * top:
        return True
    last = clocks[-STEADY_READS:]
    return len(last) == STEADY_READS and max(last) - min(last) <= STEADY_SHARE * max(last)


def warm_up(
    work: Callable[[], None],
    read: Clock | None,
    limit_s: float = WARM_LIMIT_S,
    clock: Callable[[], float] = time.monotonic,
) -> Warmed:
    """Run `work` (a turn of GPU work that waits for its end) until the SM clock settles, or `limit_s`."""
    start = clock()
    clocks: list[int] = []
    while True:
        work()
        elapsed = clock() - start
        now, top = read() if read is not None else (None, None)
        if now is None:
            if elapsed >= min(NO_CLOCK_S, limit_s):
                return Warmed(elapsed, tuple(clocks), None if not clocks else False)
            continue
        clocks.append(now)
        if elapsed >= WARM_MIN_S and settled(clocks, top):
            return Warmed(elapsed, tuple(clocks), True)
        if elapsed >= limit_s:
            return Warmed(elapsed, tuple(clocks), False)


def clock_reader(bus_id: str | None) -> tuple[Clock | None, Callable[[], None]]:
    """A function reading the SM clock and its maximum of the GPU at `bus_id` through NVML, and its closer."""
    started = nvml.open_nvml()
    if not isinstance(started, nvml.Nvml):
        return None, lambda: None
    handle = gpu_at(started, bus_id)  # None where NVML cannot place it (or no bus id): no clock to read
    if handle is None:
        return None, started.close

    def read() -> tuple[int | None, int | None]:
        now = nvml.ok(started.clock(handle, nvml.CLOCK_SM))
        return now, nvml.ok(started.max_clock(handle, nvml.CLOCK_SM))

    return read, started.close


def worth_again(figure: Measurement | None) -> bool:
    """A figure noisy by its spread, that stands as a result (not broken) and is not launch-bound (noisy by
    nature): it is measured once more."""
    if figure is None:
        return False
    p = figure.params
    return bool(p.get("noisy")) and not p.get("broken") and not p.get("launch_bound") and not p.get("noisy_first")


def the_figure(events: list[Any]) -> Measurement | None:
    return next((e for e in events if isinstance(e, Measurement)), None)


def kept(first: Measurement, second: Measurement) -> Measurement:
    """The second figure stands, with the first's spread and value in its params (`noisy_first`)."""
    spread = first.params.get("spread_rel")
    second.params["noisy_first"] = {"value": first.value, "spread_rel": spread}
    return second
