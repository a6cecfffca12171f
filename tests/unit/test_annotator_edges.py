"""The annotator's own edges: it waits 1.2 sampling intervals past a figure's end for the closing sample (and not
for one that ended long ago), widens only a window both short and thin, looks back a fixed span before the figure
for an idle moment, asks for this GPU's earlier clocks only with a GPU to ask about, and words a launch-bound figure
whose call time was not read."""

from __future__ import annotations

import time
from typing import Any

import pytest
from rigcheck.engine.events import Measurement
from rigcheck.engine.trust import conditions as conditions_module
from rigcheck.engine.trust import unseen_evidence
from rigcheck.engine.trust.conditions import ConditionsAnnotator, judge


class Spy:
    """A sampler with no samples that records every window asked of it."""

    def __init__(self, interval: float = 1.0, samples: list | None = None) -> None:  # type: ignore[type-arg]
        self.interval = interval
        self.asked: list[tuple[float, float]] = []
        self.samples = samples or []

    def window(self, start: float, end: float) -> list:  # type: ignore[type-arg]
        self.asked.append((start, end))
        return [s for s in self.samples if start <= s <= end]


def figure(t: float, t_start: float | None = None, **params: Any) -> Measurement:
    return Measurement("matmul", "x", 1.0, "GFLOP/s", None, 5, "cpu", params, t_start=t_start, t=t)


def test_it_waits_for_the_closing_sample_and_only_as_long_as_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(conditions_module.time, "sleep", slept.append)
    annotate = ConditionsAnnotator(Spy(interval=100.0), settings=[])  # long, so a stalled test host still tells
    annotate(figure(time.time()))
    assert len(slept) == 1 and 100.0 < slept[0] <= 120.0  # 1.2 intervals past the end, less the time since it
    annotate(figure(time.time() - 500.0))  # ended long ago: its closing sample is in
    assert len(slept) == 1


def test_a_window_is_widened_only_when_both_short_and_thin() -> None:
    spy = Spy(samples=[10.0, 10.5])
    annotate = ConditionsAnnotator(spy, settings=[])
    assert annotate.window(10.0, 10.5) == ([10.0, 10.5], True) and spy.asked[-1] == (9.5, 10.5)
    assert annotate.window(10.0, 12.0) == ([10.0, 10.5], False)  # 2 s: long enough, however thin
    assert annotate.window(10.0, 11.0) == ([10.0, 10.5], False)  # exactly widen_s (1 s) is long enough


def test_it_looks_back_a_fixed_span_before_the_figure() -> None:
    spy = Spy()
    ConditionsAnnotator(spy, settings=[])(figure(time.time() - 10.0, t_start=1000.0))
    assert (1000.0 - unseen_evidence.LOOKBACK_S, 1000.0) in spy.asked


def test_earlier_clocks_are_asked_for_only_with_a_gpu_to_ask_about() -> None:
    asked: list[Measurement] = []

    def clocks(m: Measurement) -> list[float]:
        asked.append(m)
        return []

    ConditionsAnnotator(Spy(), settings=[], reference_clocks=clocks)(figure(time.time() - 10.0))
    assert asked == []  # no GPU UUID: nothing to compare with
    with_gpu = figure(time.time() - 10.0, gpu_uuid="GPU-1")
    ConditionsAnnotator(Spy(), settings=[], reference_clocks=clocks)(with_gpu)
    assert asked == [with_gpu]
    plain = ConditionsAnnotator(Spy(), settings=[])(with_gpu)  # none given: none asked, and no error
    assert plain.conditions["trust"] == "UNJUDGED"


def test_a_launch_bound_figure_without_its_call_time_says_zero() -> None:
    judged = judge({"samples": 9}, figure(0.0, launch_bound=True))
    assert judged.notes == ["launch-bound: one call takes 0.0 us, near the host's launch overhead"]
