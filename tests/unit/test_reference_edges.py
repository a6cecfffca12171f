"""The reference rule's guards, each on both sides: no result (zero, broken, launch-bound) is never judged while a
small positive figure is; a figure in another unit than its reference is never graded against it; the verdict
carries the stage it is asked to; and a baseline reference is called the baseline's whatever object holds its kind."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.measure.references import Reference, reference_for
from rigcheck.engine.trust import reference as reference_module
from rigcheck.engine.trust.reference import reference_verdict, reference_verdicts

H200 = "NVIDIA H200"
QUIET = {"gpu_name": H200, "trust": "TRUSTED", "samples": 9, "clock_ratio": 0.99, "utilization_mean_pct": 99.0}


def figure(value: float, unit: str = "TFLOP/s", stage: str = "matmul", **params: Any) -> Measurement:
    return Measurement(
        stage,
        "matmul bf16 8192",
        value,
        unit,
        1.0,
        20,
        "cuda:0",
        {"bound": "compute", "timer": "events"} | params,
        QUIET,
    )


def h200_bf16() -> Reference:
    found = reference_for(H200, "matmul bf16 8192")
    assert found is not None and found.unit == "TFLOP/s"
    return found


def test_a_figure_that_is_no_result_is_never_judged_and_a_small_positive_one_is() -> None:
    ref = h200_bf16()
    assert reference_verdict(figure(0.0), ref) is None  # zero: nothing was measured, not a FAIL at 0%
    assert reference_verdict(figure(-1.0), ref) is None
    assert reference_verdict(figure(700.0, launch_bound=True), ref) is None  # judged by its launch rate, not here
    assert reference_verdict(figure(700.0, broken="timers disagree"), ref) is None
    assert reference_verdict(figure(700.0), ref).status == Status.PASS  # type: ignore[union-attr]
    # a figure under one unit is a figure: a reference of 0.8 (a small device's) judges 0.7 (87.5%) and 0.3 (38%)
    small = replace(ref, value=0.8)
    assert reference_verdict(figure(0.7), small).status == Status.PASS  # type: ignore[union-attr]
    assert reference_verdict(figure(0.3), small).status == Status.FAIL  # type: ignore[union-attr]


def test_a_figure_in_another_unit_is_never_graded_against_the_reference() -> None:
    ref = h200_bf16()
    # 700 GFLOP/s is 0.7 TFLOP/s: graded as TFLOP/s it would pass at 90% of 779.4
    assert reference_verdict(figure(700.0, unit="GFLOP/s"), ref) is None
    assert reference_verdict(figure(300.0, unit="GFLOP/s"), ref) is None  # nor FAIL on a unit slip
    assert list(reference_verdicts([figure(700.0, unit="GFLOP/s")], "matmul")) == []
    judged = reference_verdict(figure(700.0, unit="TFLOP/s"), ref)
    assert judged is not None and judged.status == Status.PASS
    # an entry or figure without a unit is compared as it stands
    assert reference_verdict(figure(700.0, unit=""), ref).status == Status.PASS  # type: ignore[union-attr]
    assert reference_verdict(figure(700.0), replace(ref, unit="")).status == Status.PASS  # type: ignore[union-attr]


@pytest.mark.parametrize(("share", "status"), [(0.9, Status.PASS), (0.8, Status.WARN), (0.4, Status.FAIL)])
def test_the_verdict_carries_the_stage_it_is_asked_for(share: float, status: Status) -> None:
    ref = h200_bf16()
    m = figure(share * ref.value, stage="matmul")
    asked = reference_verdict(m, ref, "best-of")
    assert asked is not None and asked.status == status and asked.stage == "best-of"
    assert asked.check == "reference matmul bf16 8192" and asked.device == "cuda:0"
    own = reference_verdict(m, ref)
    assert own is not None and own.stage == "matmul"


def test_a_baseline_reference_is_the_baseline_s_whatever_object_holds_its_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    kind = "".join(["base", "line"])  # equal to "baseline", but not the same object (a kind read from a file)
    baseline = Reference(H200, "matmul bf16 8192", 790.0, "TFLOP/s", kind, "a known-good box", "baseline")
    monkeypatch.setattr(reference_module, "figure_reference", lambda *_: baseline)
    (summary,) = reference_verdicts([figure(780.0)], "matmul")
    assert summary.status == Status.PASS and "of the baseline's reference figures (NVIDIA H200)" in summary.explanation
    monkeypatch.setattr(reference_module, "figure_reference", lambda *_: h200_bf16())
    (table,) = reference_verdicts([figure(780.0)], "matmul")
    assert "of their model's reference figures (H200)" in table.explanation
