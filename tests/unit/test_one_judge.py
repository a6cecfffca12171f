"""One judge per figure: trust, its structured reasons and whether they lie outside the hardware are decided in one
call, with another run on the device (--force) and what rigcheck cannot see as inputs; the record reads back from
any store; a figure beside a rival run is never FAIL."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fakes import FakeSampler
from rigcheck.engine.events import Measurement, Status, Trust
from rigcheck.engine.run.plan import RunPlan
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.session import RunSession
from rigcheck.engine.store import Store
from rigcheck.engine.trust import unseen
from rigcheck.engine.trust.cause import likely_cause
from rigcheck.engine.trust.conditions import judge
from rigcheck.engine.trust.judgement import SHARED_RUN, UNSEEN_USER, Judgement
from rigcheck.engine.trust.reference import reference_verdicts
from stage_infos import fake

H200 = "NVIDIA H200"


def matmul(value: float, **params: Any) -> Measurement:
    base = {"dtype": "bf16", "m": 4096, "library": "torch", "bound": "compute", "spread_rel": 0.01}
    base |= {"gpu_name": H200} | params
    return Measurement("matmul", "matmul bf16 4096", value, "TFLOP/s", 1.0, 20, "cuda:0", base, {}, t=time.time() - 5)


def forced_session(tmp_path: Path, sampler: FakeSampler | None) -> RunSession:
    """A session on cuda:0 whose store says run 7 shares the device (what --force allows)."""
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["timed"], "cuda:0", "quick", sys.executable, [])
    plan = RunPlan(run_id, RunRequest((fake("timed"),)), tmp_path / "logs")
    session = RunSession(store, plan, [], sampler=sampler, devices=("cuda:0",))
    store.sharing_runs = lambda run_id, devices: [7]  # type: ignore[method-assign]
    return session


@pytest.mark.parametrize("telemetry", [True, False], ids=["with telemetry", "without telemetry"])
def test_a_forced_figure_beside_a_rival_run_is_never_fail(tmp_path: Path, telemetry: bool) -> None:
    """Seen failing on the old code: the --force override made the figure SUSPECT after the judge, but its reason
    was not counted outside the hardware, so a reference check graded a half-speed H200 FAIL."""
    session = forced_session(tmp_path, FakeSampler([]) if telemetry else None)
    figure = session._annotate(matmul(300.0))  # below half the H200's reference: FAIL if it were clean
    assert figure.conditions["trust"] == "SUSPECT" and figure.conditions["other_runs_on_device"] == [7]
    assert "used the same device at the same time" in figure.conditions["trust_reasons"][-1]
    (verdict,) = reference_verdicts([figure], "matmul")
    assert verdict.status == Status.INCONCLUSIVE
    assert likely_cause(figure).kind == "outside"


def test_the_same_figure_alone_is_fail(tmp_path: Path) -> None:
    """The clean side: no other run on the device, the half-speed figure fails its reference."""
    session = forced_session(tmp_path, None)
    session.store.sharing_runs = lambda run_id, devices: []  # type: ignore[method-assign]
    figure = session._annotate(matmul(300.0))
    (verdict,) = reference_verdicts([figure], "matmul")
    assert verdict.status == Status.FAIL


QUIET: dict[str, Any] = {"samples": 9, "window_s": 1.0, "host_cpus": 8, "host_others_cpus": 0.0}


def test_the_shared_run_is_an_input_of_the_judge() -> None:
    clean = judge(QUIET, matmul(700.0))
    assert clean.trust is Trust.TRUSTED and not clean.outside_hardware
    shared = judge(QUIET, matmul(700.0), shared_runs=[3])
    assert shared.trust is Trust.SUSPECT and shared.outside_hardware
    (reason,) = shared.reasons
    assert reason.kind == SHARED_RUN and reason.outside and reason.involved == ("run 3",)
    # a broken figure stays broken: no run beside it makes it a result; the shared run is a note
    broken = judge(QUIET, matmul(700.0, broken="its two clocks disagree"), shared_runs=[3])
    assert broken.trust is Trust.BROKEN and not broken.trust.is_result
    assert any("same device" in note for note in broken.notes)


def test_what_rigcheck_cannot_see_is_an_input_of_the_judge() -> None:
    found = unseen.Findings(reasons=["another process ..."], notes=["a note"])
    noisy = judge(QUIET, matmul(700.0, spread_rel=0.09), unseen=found)
    assert (noisy.trust, noisy.reasons, noisy.notes) == (
        "SUSPECT",
        ["another process ..."],
        ["a note", "timing spread 9% of the median"],
    )
    assert noisy.reasons[0].kind == UNSEEN_USER and noisy.outside_hardware
    broken = judge(QUIET, matmul(700.0, broken="over its limit"), unseen=found)
    assert (broken.trust, broken.reasons, broken.notes) == (
        "BROKEN",
        ["over its limit"],
        ["a note", "another process ..."],
    )
    assert judge(QUIET, matmul(700.0), unseen=unseen.Findings()) == Judgement(Trust.TRUSTED, [], [])


def test_the_record_reads_back_what_it_stored() -> None:
    rival = [{"pid": 825, "name": "python3", "gpu_memory": 2**30}]
    judged = judge(QUIET | {"other_gpu_processes": rival}, matmul(700.0), shared_runs=[3])
    back = Judgement.of(judged.stored())
    assert back == judged
    assert [r.kind for r in back.reasons] == [r.kind for r in judged.reasons] == ["gpu-processes", SHARED_RUN]
    assert back.reasons[0].involved == ("python3 (pid 825)",)


def test_a_store_from_before_the_detail_reads_its_kinds_and_outside() -> None:
    old = {"trust": "SUSPECT", "trust_reasons": ["run(s) 4 used the same device at the same time (--force)"]}
    judged = Judgement.of(old)
    assert judged is not None and judged.outside_hardware and judged.reasons[0].kind == SHARED_RUN
    assert Judgement.of({"samples": 0}) is None and Judgement.of({"trust": "a word from later"}) is None


def test_trust_carries_what_the_reports_restate() -> None:
    assert [t.code for t in Trust] == [0, 1, 2, 4, 5]
    assert [t for t in Trust if not t.is_result] == [Trust.BROKEN]
    assert [t for t in Trust if t.sound] == [Trust.TRUSTED]
    assert Trust.of("SUSPECT") is Trust.SUSPECT and Trust.of(None) is None and Trust.of("LATER") is None


def test_the_whole_record_carries_its_expectation_and_its_one_cause() -> None:
    from rigcheck.engine.trust.cause import Expectation
    from rigcheck.engine.trust.conditions import stamp
    from rigcheck.engine.trust.explained import explained

    rival = [{"pid": 825, "name": "python3", "gpu_memory": 2**30}]
    conditions = QUIET | {"other_gpu_processes": rival}
    figure = stamp(matmul(400.0), conditions, judge(conditions, matmul(400.0)))
    whole = explained(figure, Expectation(800.0, "the H200's published MAMF", "reference"))
    assert whole is not None and whole.outside_hardware
    assert whole.expectation is not None and whole.expectation.ratio == 0.5 and whole.expectation.basis == "reference"
    assert (
        whole.cause is not None
        and "python3 (pid 825)" in whole.cause
        and whole.next_step == "stop pid 825 and run again"
    )
    assert Judgement.of(whole.stored()) == whole  # it keeps and reads back whole
    alone = explained(stamp(matmul(700.0), QUIET, judge(QUIET, matmul(700.0))))
    assert alone is not None and alone.expectation is not None and alone.expectation.value is None
    assert alone.expectation.none_why and alone.trust is Trust.TRUSTED
    assert explained(matmul(700.0)) is None  # no judge saw it: no telemetry, no trust
