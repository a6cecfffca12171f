"""The one place an expectation verdict takes its figure's cause (engine/trust/expect_words.py): the status a rule
gave, settled by the cause, and the exact words each case adds to the verdict's sentence, written out here."""

from __future__ import annotations

from dataclasses import replace

import pytest
from rigcheck.engine.events import Status
from rigcheck.engine.trust.cause import Expectation
from rigcheck.engine.trust.expect_words import joined, judge
from test_expectation_causes import GPU_RIVAL, gpu, settings

EXPECTED = Expectation(100.0, "its model's entry", "reference")
NOTHING = "nothing in its conditions (clocks, power, load and settings were normal): likely the software stack"
NOTHING_NEXT = "compare `rigcheck run probe`'s torch and CUDA with a healthy host's or the reference's"
RIVAL = "1 other process(es) on the GPU: python3 (pid 825)"
TF32 = (
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 is set: asks torch to run every fp32 matrix multiply as TF32: where it "
    "takes effect, fp32 figures are TF32's (named on a figure only where its rate shows it)"
)


def test_a_clean_pass_adds_no_words_and_no_disturbance() -> None:
    found = judge(gpu("matmul", "matmul bf16 4096", 99.0, "TFLOP/s"), Status.PASS, EXPECTED)
    assert (found.status, found.words) == (Status.PASS, "")
    assert found.numbers == {
        "cause": NOTHING,
        "next": NOTHING_NEXT,
        "cause_kind": "nothing",
        "expectation": 100.0,
        "expectation_source": "its model's entry",
    }
    assert joined("head", found) == "head"


def test_a_pass_by_a_slow_clock_names_nothing_the_hardware_explains() -> None:
    slow = gpu("matmul", "matmul bf16 4096", 99.0, "TFLOP/s", clock_ratio=0.8)
    found = judge(slow, Status.PASS, EXPECTED)
    assert (found.status, found.words, found.cause.kind) == (Status.PASS, "", "clocks")


def test_a_pass_measured_while_disturbed_says_so_and_is_marked() -> None:
    found = judge(gpu("matmul", "matmul bf16 4096", 99.0, "TFLOP/s", **GPU_RIVAL), Status.PASS, EXPECTED)
    assert found.status == Status.PASS
    assert found.words == f"measured while disturbed ({RIVAL}), and still meets it"
    assert found.numbers["disturbed"] is True and found.numbers["cause_kind"] == "outside"
    assert joined("head", found) == f"head; measured while disturbed ({RIVAL}), and still meets it"


def test_a_pass_above_its_expectation_with_a_setting_that_explains_it_names_the_setting() -> None:
    figure = gpu("matmul", "matmul fp32 4096", 300.0, "TFLOP/s", **settings(TORCH_ALLOW_TF32_CUBLAS_OVERRIDE="1"))
    found = judge(figure, Status.PASS, EXPECTED)
    assert (found.status, found.words) == (Status.PASS, TF32)
    assert "disturbed" not in found.numbers and "would_be" not in found.numbers


def test_a_warn_quotes_its_cause_and_next_step() -> None:
    found = judge(gpu("matmul", "matmul bf16 4096", 30.0, "TFLOP/s"), Status.WARN, EXPECTED)
    assert (found.status, found.words) == (Status.WARN, f"likely cause: {NOTHING}; next: {NOTHING_NEXT}")
    assert "would_be" not in found.numbers and "disturbed" not in found.numbers


@pytest.mark.parametrize("graded", [Status.WARN, Status.FAIL])
def test_a_disturbed_figure_below_it_could_not_be_judged(graded: Status) -> None:
    found = judge(gpu("matmul", "matmul bf16 4096", 30.0, "TFLOP/s", **GPU_RIVAL), graded, EXPECTED)
    assert found.status == Status.INCONCLUSIVE and found.numbers["would_be"] == graded.value
    assert found.words == f"could not be judged: {RIVAL}; next: stop pid 825 and run again"
    assert "disturbed" not in found.numbers


def test_a_broken_figure_is_never_a_pass() -> None:
    figure = gpu("matmul", "matmul bf16 4096", 99.0, "TFLOP/s")
    figure = replace(figure, params=figure.params | {"broken": "two clocks disagree"})
    found = judge(figure, Status.PASS, EXPECTED)
    assert found.status == Status.INCONCLUSIVE and found.numbers["would_be"] == "PASS"
    assert found.words == "could not be judged: two clocks disagree; next: run it again"
