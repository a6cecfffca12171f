"""Noise is measured again, not reported as a fault (issue 41, item 4): the GPU is brought to its working clock
before the first figure; a noisy figure is measured once more and the second stands; one that stays noisy is a
note, never the stage's WARN."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import torch
from rigcheck.engine.events import LogLine, Measurement, Status, Verdict
from rigcheck.engine.stage import StageContext, StageSpec
from rigcheck.engine.stages.matmul import stage as matmul_stage
from rigcheck.engine.stages.matmul import steady


class Ticks:
    """A clock that moves a fixed step at each read: the warm-up's work takes `step` seconds a turn."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def reads(values: list[int | None], top: int | None = 1980) -> Any:
    it = iter(values)
    return lambda: (next(it, values[-1]), top)


def test_warm_up_runs_until_the_clock_ramps_to_its_working_level() -> None:
    ramp = [345, 900, 1400, 1700, 1850, 1900]  # an idle H100 ramping up
    warmed = steady.warm_up(lambda: None, reads(ramp), clock=Ticks(0.1))
    assert warmed.steady and warmed.clocks[-1] >= steady.NEAR_MAX * 1980 and warmed.clocks[0] == 345


def test_a_power_capped_clock_that_holds_below_its_maximum_is_steady() -> None:
    held = [345, 1200, 1470, 1475, 1468]  # an H200 at 700 W: steady at 74% of its maximum
    warmed = steady.warm_up(lambda: None, reads(held), clock=Ticks(0.1))
    assert warmed.steady and warmed.clocks[-3:] == (1470, 1475, 1468)


def test_a_clock_that_keeps_moving_stops_at_the_limit() -> None:
    moving = list(range(300, 1900, 100))
    warmed = steady.warm_up(lambda: None, reads(moving), limit_s=0.5, clock=Ticks(0.1))
    assert warmed.steady is False and warmed.seconds >= 0.5


def test_no_clock_reading_keeps_it_busy_a_second() -> None:
    turns: list[int] = []
    warmed = steady.warm_up(lambda: turns.append(1), None, clock=Ticks(0.25))
    assert warmed.steady is None and warmed.seconds >= steady.NO_CLOCK_S and len(turns) == 4
    assert "could not be read" in warmed.words()


@pytest.mark.parametrize(
    ("clocks", "top", "done"),
    [([1780], 1980, False), ([1783], 1980, True), ([1000, 1030, 1000], None, True), ([1000, 1031, 1000], None, False)],
)
def test_settled_edges(clocks: list[int], top: int | None, done: bool) -> None:
    assert steady.settled(clocks, top) == done


def figure(spread: float, **params: Any) -> Measurement:
    p = {"noisy": spread > 0.05, "spread_rel": spread, "broken": None, "launch_bound": False} | params
    return Measurement("matmul", "matmul fp32 512", 900.0, "GFLOP/s", spread * 900, 10, "cpu", p)


def test_only_a_noisy_usable_figure_is_measured_again() -> None:
    assert steady.worth_again(figure(0.051)) and not steady.worth_again(figure(0.05))
    assert not steady.worth_again(figure(0.2, launch_bound=True)) and not steady.worth_again(figure(0.2, broken="x"))
    assert not steady.worth_again(figure(0.2, noisy_first={"spread_rel": 0.2}))


def sweep_with(monkeypatch: pytest.MonkeyPatch, spreads: list[float]) -> list[Any]:
    """The CPU sweep of one point, its figures' spreads taken in turn from `spreads`."""
    taken = iter(spreads)

    def point(*args: Any, **kwargs: Any) -> Iterator[Any]:
        yield figure(next(taken), dtype="fp32", library="torch", m=512, share_of_peak=None, peak=None)

    monkeypatch.setattr(matmul_stage, "measure_point", point)
    monkeypatch.setattr(matmul_stage, "warm_up_cpu", lambda: None)
    monkeypatch.setattr(matmul_stage, "CPU_SIZES", {"quick": [512]})
    monkeypatch.setattr(matmul_stage, "native_cpu_dtypes", lambda: {"bf16"})
    monkeypatch.setattr(matmul_stage, "no_native_unit", lambda *a: False)
    return list(matmul_stage.sweep(StageContext(StageSpec("matmul", "cpu", "quick")), torch.device("cpu")))


def test_a_figure_noisy_then_clean_stands_clean_and_nothing_is_said_of_noise(monkeypatch: pytest.MonkeyPatch) -> None:
    """Failed on the old code: the noisy first figure stood, and the stage said WARN '1 figure(s) were noisy'."""
    events = sweep_with(monkeypatch, [0.12, 0.02] * 3)
    figures = [e for e in events if isinstance(e, Measurement)]
    assert len(figures) == 3 and all(f.params["spread_rel"] == 0.02 for f in figures)
    assert figures[0].params["noisy_first"] == {"value": 900.0, "spread_rel": 0.12}
    assert any(isinstance(e, LogLine) and "measuring again" in e.text for e in events)
    assert not [e for e in events if isinstance(e, Verdict) and e.check == "noise"]
    assert not [e for e in events if isinstance(e, Verdict) and e.status == Status.WARN]


def test_a_figure_that_stays_noisy_is_a_note_not_a_warn(monkeypatch: pytest.MonkeyPatch) -> None:
    events = sweep_with(monkeypatch, [0.12, 0.11] * 3)
    (noise,) = [e for e in events if isinstance(e, Verdict) and e.check == "noise"]
    assert noise.status == Status.PASS and noise.explanation.startswith("note: ")
    assert "matmul fp32 512 (spread 12%, then 11%)" in noise.explanation
    assert not [e for e in events if isinstance(e, Verdict) and e.status == Status.WARN]


def test_a_clean_figure_is_measured_once(monkeypatch: pytest.MonkeyPatch) -> None:
    events = sweep_with(monkeypatch, [0.02] * 3)
    assert len([e for e in events if isinstance(e, Measurement)]) == 3
    assert not any(isinstance(e, LogLine) and "measuring again" in e.text for e in events)
