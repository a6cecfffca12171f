"""Repeats sized by their spread: a quiet figure stops at its floors, a noisy one runs to its ceiling."""

from __future__ import annotations

import math

from rigcheck.engine.measure.repeats import enough, relative_spread


def test_spread_is_range_over_median() -> None:
    assert math.isclose(relative_spread([1.0, 1.02, 0.99]), 0.03)
    assert relative_spread([1.0]) == math.inf
    assert relative_spread([0.0, 0.0]) == math.inf


def test_quiet_repeats_stop_at_the_floors() -> None:
    quiet = [0.100, 0.101, 0.100]
    assert enough(quiet, 0.30, min_repeats=3, min_seconds=0.25, max_seconds=1.0)
    assert not enough(quiet[:2], 0.30, min_repeats=3, min_seconds=0.25, max_seconds=1.0)  # too few
    assert not enough(quiet, 0.20, min_repeats=3, min_seconds=0.25, max_seconds=1.0)  # too short


def test_noisy_repeats_go_on_until_the_ceiling() -> None:
    noisy = [0.10, 0.13, 0.09, 0.12]
    assert not enough(noisy, 0.44, min_repeats=3, min_seconds=0.25, max_seconds=1.0)
    assert enough(noisy, 1.0, min_repeats=3, min_seconds=0.25, max_seconds=1.0)


def test_the_last_repeats_decide_once_a_ramp_has_settled() -> None:
    ramp = [0.20, 0.15, 0.100, 0.101, 0.100]
    assert enough(ramp, 0.65, min_repeats=3, min_seconds=0.25, max_seconds=1.0)


def test_never_fewer_than_the_floor_of_repeats_even_past_the_ceiling() -> None:
    assert not enough([3.0, 3.1], 6.1, min_repeats=3, min_seconds=0.25, max_seconds=1.0)
