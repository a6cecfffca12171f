"""A figure's whole judgement (engine/trust/explained.py): the expectation it was held to with its ratio, or none
and why, and its one cause; none for a figure no judge saw."""

from __future__ import annotations

import time
from typing import Any

from rigcheck.engine.events import Measurement, Trust
from rigcheck.engine.trust.cause import Expectation
from rigcheck.engine.trust.conditions import judge, stamp
from rigcheck.engine.trust.explained import explained
from rigcheck.engine.trust.judgement import Expected

QUIET: dict[str, Any] = {"samples": 9, "window_s": 1.0, "host_cpus": 8, "host_others_cpus": 0.0}


def judged(value: float) -> Measurement:
    params = {"dtype": "bf16", "m": 4096, "bound": "compute", "spread_rel": 0.01, "gpu_name": "NVIDIA H200"}
    bare = Measurement("matmul", "matmul bf16 4096", value, "TFLOP/s", 1.0, 20, "cuda:0", params, {}, t=time.time())
    return stamp(bare, QUIET, judge(QUIET, bare))


def test_the_ratio_is_the_figure_over_its_expectation() -> None:
    whole = explained(judged(1000.0), Expectation(800.0, "the H200's published MAMF", "history"))
    assert whole is not None and whole.trust is Trust.TRUSTED
    assert whole.expectation == Expected(800.0, "history", "the H200's published MAMF", 1.25)


def test_no_expectation_or_one_of_nothing_holds_it_to_none_and_says_why() -> None:
    for given in (None, Expectation(0.0, "a reference of 0", "reference")):
        whole = explained(judged(700.0), given)
        assert whole is not None
        assert whole.expectation == Expected(none_why="no reference, baseline, peer or history for this figure")
    why = explained(judged(700.0), None, "its GPU is not in the reference table")
    assert why is not None and why.expectation == Expected(none_why="its GPU is not in the reference table")
