"""Verify's soak says how far it is as it goes (issue 43: on a busy host the stage sat at '88% soak of 200 steps'
for up to 1.5 minutes), and its progress never runs ahead of the steps taken or past the soak's own share."""

from __future__ import annotations

import pytest
import torch
from rigcheck.engine.events import Progress, Status, Verdict
from rigcheck.engine.models.board_net import BoardNetConfig
from rigcheck.engine.stage import StageContext, StageSpec
from rigcheck.engine.stages.verify import stage as verify

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def soaked() -> list[int | Verdict]:
    """One real soak's items (its step counts, then its verdict), taken once for the tests below."""
    return list(verify.soak(BoardNetConfig(16, 1), 32, 60, CPU))


def soak_events(items: list[int | Verdict], clock_step: float, steps: int = 60) -> list[object]:
    ticks = iter(range(10**6))
    progress = verify.Steps(3)
    progress.begin("before")
    progress.begin(f"soak of {steps} steps")
    return list(verify.soak_progress(progress, iter(items), steps, lambda: next(ticks) * clock_step))


def test_a_slow_soak_says_each_step_within_its_share_of_the_bar(soaked: list[int | Verdict]) -> None:
    events = soak_events(soaked, clock_step=1.0)  # a second a step: every step is said
    said = [e for e in events if isinstance(e, Progress)]
    assert [e.what for e in said[:2]] == ["soak step 1 of 60", "soak step 2 of 60"] and len(said) == 60
    done = [e.done for e in said]
    assert done == sorted(done) and all(100 <= d < 200 for d in done) and {e.total for e in said} == {300}
    assert isinstance(events[-1], Verdict) and events[-1].status == Status.PASS


def test_a_fast_soak_is_said_only_every_so_often(soaked: list[int | Verdict]) -> None:
    events = soak_events(soaked, clock_step=verify.SOAK_PROGRESS_S / 4)  # four steps between two words
    said = [e for e in events if isinstance(e, Progress)]
    assert [e.what for e in said] == [f"soak step {n} of 60" for n in range(4, 61, 4)]
    assert isinstance(events[-1], Verdict)


def test_the_stage_shows_the_soak_moving_and_ends_at_its_total(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(verify, "SOAK_PROGRESS_S", 0.0, raising=False)  # every step, however fast
    monkeypatch.setitem(verify.PLANS, "quick", (64, 64, 64, BoardNetConfig(16, 1), 32, 60, 0.1))  # small and quick
    events = list(verify.run(StageContext(StageSpec("verify", "cpu", "quick"))))
    said = [e for e in events if isinstance(e, Progress)]
    soak = [e for e in said if e.what.startswith("soak step")]
    assert len(soak) == 60, [e.what for e in said]
    shares = [e.done / e.total for e in said]
    assert shares == sorted(shares) and said[-1].done == said[-1].total and said[-1].what == "finished"
