"""The run's closing note on the settings in force (issue 41): a setting no figure was off by is said to be set and
harmless on this run, one named as a figure's cause says how many figures, and a run with none says nothing."""

from __future__ import annotations

import json
from typing import Any

from rigcheck.engine.events import Measurement
from rigcheck.engine.facts.settings import InForce
from rigcheck.engine.report.settings_note import settings_line
from rigcheck.engine.trust.cause import Expectation, likely_cause

SLOW = InForce("CUDA_LAUNCH_BLOCKING", "1", ("matmul",), "every launch waits", "unset it", True)
ALLOC = InForce("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", ("memory",), "segments grow", "unset it", True)


def counted(judged: int) -> dict[str, Any]:
    """A stage's "expectations" verdict: how many of its figures were judged against an expectation."""
    return {"stage": "matmul", "check_name": "expectations", "numbers": {"judged": judged, "not_judged": 0}}


def noted(setting: InForce) -> dict[str, Any]:
    """Probe's note on a setting in force, as the store gives it back (its numbers as JSON text)."""
    numbers = {"setting": setting.as_dict(), "note": True}
    return {"stage": "probe", "check_name": f"setting {setting.name}", "status": "PASS", "numbers": json.dumps(numbers)}


def judged(value: float, check: str = "reference matmul bf16 8192") -> dict[str, Any]:
    """A matmul figure's verdict against an expectation of 500, with the numbers its cause left on it."""
    figure = Measurement("matmul", "matmul bf16 8192", value, "TFLOP/s", None, 20, "cuda:0", {}, {"trust": "TRUSTED"})
    found = likely_cause(figure, Expectation(500.0, "the H200's 500"), [SLOW])  # those that change matmul
    return {"stage": "matmul", "device": "cuda:0", "check_name": check, "status": "PASS", "numbers": found.numbers()}


def test_a_run_with_no_setting_in_force_has_no_note() -> None:
    assert settings_line({"verdicts": [judged(300.0)]}) is None
    assert settings_line({"verdicts": []}) is None


def test_a_setting_no_figure_was_off_by_is_set_and_harmless() -> None:
    report = {"verdicts": [noted(SLOW), counted(2), judged(500.0), judged(451.0, "reference matmul bf16 4096")]}
    assert settings_line(report) == "settings in force: CUDA_LAUNCH_BLOCKING=1 set, and no figure was off"  # 10% edge


def test_with_no_figure_judged_a_setting_is_not_called_harmless() -> None:
    report = {"verdicts": [noted(SLOW), counted(0), judged(500.0)]}
    assert settings_line(report) == (
        "settings in force: CUDA_LAUNCH_BLOCKING=1 set; no figure was judged against an expectation, "
        "so none could be seen off"
    )


def test_a_setting_named_as_the_cause_of_figures_says_how_many() -> None:
    report = {
        "verdicts": [
            noted(SLOW),
            noted(ALLOC),
            counted(3),
            judged(300.0),
            judged(449.0, "reference matmul bf16 4096"),  # just past the 10% below its expectation
            judged(300.0),  # the same figure's verdict twice counts once
        ]
    }
    assert settings_line(report) == (
        "settings in force: CUDA_LAUNCH_BLOCKING=1 named as the cause of 2 figure(s); "
        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True set, and no figure was off"
    )


def test_only_probes_notes_count_and_odd_numbers_are_passed_over() -> None:
    elsewhere = noted(SLOW) | {"stage": "matmul"}
    odd = [{"stage": "probe", "numbers": "not json"}, {"stage": "probe", "numbers": "[1]"}, {"stage": "probe"}]
    assert settings_line({"verdicts": [elsewhere, *odd]}) is None
    twice = {"verdicts": [noted(SLOW), noted(SLOW), counted(1)]}
    assert settings_line(twice) == "settings in force: CUDA_LAUNCH_BLOCKING=1 set, and no figure was off"
