"""Training's CPU arm in bounds: a slow host's larger CPU figures are left out with a SKIP that says why, the
first always runs, and a CPU step long enough to be a chunk on its own spends no step on sizing chunks."""

from __future__ import annotations

import time

import pytest
import torch
from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.stage import StageContext, StageSpec
from rigcheck.engine.stages import training, training_cpu
from rigcheck.engine.stages.training_cpu import FLOOR_STEPS, CpuBudget


def test_the_first_figure_always_runs_and_the_next_only_within_the_budget() -> None:
    budget = CpuBudget(10.0)
    assert budget.skip(128, 4096, "c128 b4096 fp32", "training") is None  # nothing measured yet: it runs
    budget.spent(64, 256, 2.0, 8)  # 2 s over 8 timed steps and 2 untimed: 0.2 s a step of c64 b256
    assert budget.predicted_s(64, 256) == pytest.approx(FLOOR_STEPS * 0.2)
    # 2 s spent; c64 b1024 at its floor: 5 steps of 0.8 s = 4 s, 6 s in all: fits
    assert budget.skip(64, 1024, "c64 b1024 fp32", "training") is None
    budget.spent_s = 6.0 - 1e-9  # just inside: 6 + 4 = 10
    assert budget.skip(64, 1024, "c64 b1024 fp32", "training") is None
    budget.spent_s = 6.0 + 1e-6  # just past
    verdict = budget.skip(64, 1024, "c64 b1024 fp32", "training")
    assert isinstance(verdict, Verdict) and verdict.status == Status.SKIP and verdict.device == "cpu"
    assert "not measured: at least 4.0 s on this host's CPU" in verdict.explanation
    assert "past the CPU arm's 10 s" in verdict.explanation and verdict.check == "c64 b1024 fp32"


def test_the_latest_figure_sets_the_prediction() -> None:
    budget = CpuBudget(100.0)
    budget.spent(64, 256, 3.0, 8)
    budget.spent(64, 256, 1.0, 8)  # the nearest in size to what comes next: its cost counts
    assert budget.predicted_s(64, 256) == pytest.approx(FLOOR_STEPS * 0.1)
    assert budget.spent_s == pytest.approx(4.0)


def test_the_stage_skips_what_does_not_fit_and_still_judges_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(training.CPU_PLAN, "quick", ([8], [8, 16], ["fp32"]))
    monkeypatch.setitem(training_cpu.BUDGET_S, "quick", 0.0)
    events = list(training.run(StageContext(StageSpec("training", "cpu", "quick"))))
    figures = [e for e in events if isinstance(e, Measurement)]
    verdicts = {e.check: e for e in events if isinstance(e, Verdict)}
    assert [m.name for m in figures] == ["train c8 b8 fp32"]  # the first ran, whatever the budget
    assert verdicts["c8 b16 fp32"].status == Status.SKIP
    assert verdicts["throughput"].status in (Status.NOT_JUDGED, Status.INCONCLUSIVE)  # judged on what ran


def test_a_long_cpu_step_spends_no_step_on_sizing_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real_loss = training.loss_fn

    def slow_loss(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(1)
        time.sleep(training.LONG_STEP_S)  # every step as long as a chunk and more
        return real_loss(*args, **kwargs)

    monkeypatch.setattr(training, "loss_fn", slow_loss)
    _rate, steps, _start, extras = training.train_rate(8, 8, "fp32", torch.device("cpu"), max_seconds=0.3)
    assert len(calls) == steps + 1  # one warm-up step, then only timed ones (before: a sizing step too)
    assert extras["chunks"] == steps >= training.MIN_CHUNKS  # one step a chunk
