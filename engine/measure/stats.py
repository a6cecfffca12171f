"""Summary statistics of repeated timings: median, best, interquartile spread, noise, and a second clock.

Standard library only, so the parent and tests can use it without torch.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")

NOISY_SPREAD = 0.05  # interquartile range above 5% of the median
LAUNCH_BOUND_S = 50e-6  # a GPU call shorter than this can be paced by the host's launches (fp8 1024 on an H200: 25 us)
# A wall clock (CLOCK_REALTIME) can be stepped by NTP or by hand: a timing it reads as negative, or as
# this many times longer than the primary clock's (and at least STEP_MIN_S longer), saw a step.
STEP_RATIO = 10.0
STEP_MIN_S = 0.05
# Over the whole timed span, two host clocks agree within this share plus this floor: reading the two clocks
# costs the same at both ends of each timing, so only a thread preempted between two reads skews a sum.
SPAN_SHARE = 0.03
SPAN_FLOOR_S = 0.2e-3


@dataclass(frozen=True)
class TimingStats:
    """Seconds per call of each timing, and the same intervals by a second, independent clock.

    `check_times` are per call like `times`: on a GPU the host's wall clock around each timed group
    (launch and synchronisation included), on the CPU CLOCK_REALTIME against perf_counter: a clock
    outside the monotonic family, so a fault that moves perf_counter's family cannot move it too.
    """

    times: tuple[float, ...]
    check_times: tuple[float, ...] = ()
    primary: str = "events"  # what `times` came from
    check: str = "wall clock"  # what `check_times` came from
    calls_per_timing: int = 1

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def iqr(self) -> float:
        if len(self.times) < 4:
            return max(self.times) - min(self.times)
        q1, _, q3 = statistics.quantiles(self.times, n=4, method="inclusive")
        return q3 - q1

    @property
    def spread(self) -> float:
        """Interquartile range of the rates (one over each time) relative to their median. Over times, one
        preempted call of 50x the median made a spread of 50x the figure, in a rate that cannot go below 0."""
        rates = [1.0 / t for t in self.times if t > 0]
        if len(rates) < 2:
            return 0.0
        if len(rates) < 4:
            iqr = max(rates) - min(rates)
        else:
            q1, _, q3 = statistics.quantiles(rates, n=4, method="inclusive")
            iqr = q3 - q1
        middle = statistics.median(rates)
        return iqr / middle if middle > 0 else 0.0

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD

    def rate(self, work: float) -> tuple[float, float, float]:
        """(median rate, best rate, interquartile spread of the rates in rate units) for `work` units per timing."""
        median_rate = work / self.median
        return median_rate, work / self.best, median_rate * self.spread

    def disagreement(self) -> str | None:
        """Why the two clocks cannot both be right, or None when they agree (see `clocks_disagree`)."""
        if not self.check_times:
            return None
        # The pair whose two readings differ by the median amount: a thread preempted between reading
        # one clock and the other (common on a busy host) skews a few pairs, never the median one.
        pairs = self._unstepped_pairs()
        span = self._span_disagreement(pairs)
        primary, check = middle(pairs, lambda pair: pair[1] - pair[0])
        one = clocks_disagree(primary * self.calls_per_timing, check * self.calls_per_timing, self.primary, self.check)
        return one or span

    def _span_disagreement(self, pairs: list[tuple[float, float]]) -> str | None:
        """Two host clocks over the whole timed span: a call of microseconds is too short for one pair to show
        a clock running at half speed (under the 50 us allowance), the sum of them all is not."""
        if self.primary == "events" or not pairs:
            return None
        primary = sum(p for p, _ in pairs) * self.calls_per_timing
        check = sum(c for _, c in pairs) * self.calls_per_timing
        # the typical pair's ratio, not the sums': one call preempted between its two reads skews a sum, never
        # the median; a clock running at another rate moves every pair's ratio, and so the median
        ratios = [c / p for p, c in pairs if p > 0]
        if not ratios:
            return None
        typical = middle(ratios, lambda ratio: ratio - 1.0)
        expected = typical * primary  # the check clock's span, had every call gone as the typical one
        if abs(expected - primary) > SPAN_SHARE * max(primary, expected) + SPAN_FLOOR_S:
            text = f"{self.primary} {_ms(primary)}, {self.check} {_ms(check)}; the typical call {typical:.2f}x"
            return f"two host clocks disagree over the whole timed span ({text})"
        return None

    def _stepped(self) -> list[int]:
        """Indexes of the timings in which a host check clock stepped: read backwards, or jumped far past
        the primary clock. A step is a rare event: where most timings look stepped, the clocks disagree."""
        if self.primary == "events":
            return []
        found = [
            index
            for index, (primary, check) in enumerate(zip(self.times, self.check_times, strict=False))
            if check < 0 or (check > primary * STEP_RATIO and check - primary > STEP_MIN_S / self.calls_per_timing)
        ]
        return found if len(found) <= max(1, len(self.times) // 4) else []

    def _unstepped_pairs(self) -> list[tuple[float, float]]:
        stepped = set(self._stepped())
        return [pair for i, pair in enumerate(zip(self.times, self.check_times, strict=False)) if i not in stepped]

    def check_stepped(self) -> str | None:
        """A note where the second clock stepped during some timings, which were then not compared."""
        stepped = self._stepped()
        if not stepped:
            return None
        return (
            f"the second clock stepped: {self.check} jumped during {len(stepped)} of {len(self.times)} timings "
            "(an NTP or manual clock change), which were not compared; not a broken timer"
        )


def middle(values: list[T], off: Callable[[T], float]) -> T:
    """The median of `values` ordered by `off` (how far each is from agreement, signed); of an even count's two
    middle ones, the one nearer agreement. With two calls, one preempted between its two clock reads must not be
    the median (the upper one was, and a busy host's two-call figure broke on it); a clock that truly disagrees
    moves both middle ones."""
    ordered = sorted(values, key=off)
    half = len(ordered) // 2
    if len(ordered) % 2:
        return ordered[half]
    return min(ordered[half - 1], ordered[half], key=lambda value: abs(off(value)))


def clocks_disagree(primary_s: float, check_s: float, primary: str, check: str) -> str | None:
    """One timed interval read by two clocks; None when they agree within what overhead explains.

    With device events the check clock (wall) encloses the events, so the events can never be
    longer; the wall may exceed them by launch and synchronisation overhead, a fraction of a
    millisecond, but not by many times on a multi-millisecond interval. Two host clocks must agree
    to within a percent.
    """
    text = f"{primary} {_ms(primary_s)}, {check} {_ms(check_s)}"
    if primary == "events":
        if primary_s > check_s * 1.02 + 20e-6:
            return f"the device timer read longer than the wall clock around it ({text})"
        if check_s > 1e-3 and check_s > 4.0 * primary_s + 0.5e-3:
            return f"the device timer disagrees with the wall clock ({text})"
        return None
    if abs(primary_s - check_s) > 0.01 * max(primary_s, check_s) + 50e-6:
        return f"two host clocks disagree ({text})"
    return None


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"
