"""A figure above its physical limit is never NOISY, at any size: the limit is checked before the noise label; and
two host clocks are compared over the whole timed span, so a clock at half speed is caught on calls of a few
microseconds, too short for any one pair to show it."""

from __future__ import annotations

import pytest
from rigcheck.engine.events import Measurement
from rigcheck.engine.measure.stats import SPAN_FLOOR_S, SPAN_SHARE, TimingStats
from rigcheck.engine.trust.conditions import judge

LIMIT = 1000.0


@pytest.mark.parametrize("size", [64, 256, 512, 1024, 4096])
@pytest.mark.parametrize(("value", "trust"), [(LIMIT * 1.1001, "BROKEN"), (LIMIT * 1.1, "NOISY")])
def test_over_its_limit_is_broken_before_noisy_at_every_size(size: int, value: float, trust: str) -> None:
    params = {"limit": LIMIT, "limit_basis": "16 CPUs", "spread_rel": 0.6, "threads": 1, "m": size}
    figure = Measurement("matmul", f"matmul fp32 {size}", value, "GFLOP/s", device="cpu", params=params)
    assert judge({"samples": 10}, figure).trust == trust


def host(times: list[float], checks: list[float]) -> TimingStats:
    return TimingStats(tuple(times), tuple(checks), "perf_counter", "CLOCK_REALTIME")


def test_a_clock_at_half_speed_on_calls_of_microseconds_is_caught_over_the_span() -> None:
    calls = 200
    slowed = host([5e-6] * calls, [10e-6] * calls)  # each pair within the 50 us allowance
    found = slowed.disagreement()
    assert found is not None and found.startswith("two host clocks disagree over the whole timed span")
    assert host([10e-6] * calls, [10.05e-6] * calls).disagreement() is None  # the clean case


@pytest.mark.parametrize(("excess", "caught"), [(0.99, False), (1.01, True)])
def test_the_span_allowance_edges(excess: float, caught: bool) -> None:
    calls, each = 100, 1e-3
    total = calls * each
    allowed = (SPAN_SHARE * total + SPAN_FLOOR_S) / (1 - SPAN_SHARE)  # max() is the check: total + allowed
    # spread the excess so that no single pair disagrees (each well under 1% + 50 us)
    stats = host([each] * calls, [each + excess * allowed / calls] * calls)
    per_pair = (excess * allowed / calls) / each
    assert per_pair < 0.01 + 50e-6 / each
    assert (stats.disagreement() is not None) is caught


def test_device_events_keep_their_own_rule() -> None:
    events = TimingStats((1e-3,) * 10, (1.05e-3,) * 10)
    assert events.disagreement() is None
