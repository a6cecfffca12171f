"""Any exit of `run` other than 0 ends with one line saying what it means, and the Markdown export's status says
the same (issue 43: "status: complete (exit code 7; 0 verdicts fail the run)" read as a contradiction)."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.report.exit_words import exit_line
from rigcheck.engine.report.markdown import _status
from rigcheck.engine.trust.cause import Expectation
from rigcheck.engine.trust.expect_words import judge

LOAD = "someone else's load: other processes kept 0.2 of 2 CPUs busy"


def verdict(status: str, check: str, cause: str = "", explanation: str = "x") -> dict[str, Any]:
    return {
        "status": status,
        "check_name": check,
        "explanation": explanation,
        "numbers": {"cause": cause} if cause else {},
    }


def report(code: int, *verdicts: dict[str, Any]) -> dict[str, Any]:
    return {"run": {"status": "complete", "exit_code": code}, "verdicts": list(verdicts)}


def test_exit_7_names_the_figures_that_could_not_be_judged() -> None:
    said = exit_line(7, report(7, verdict("PASS", "a"), verdict("INCONCLUSIVE", "cpu matmul fp32 512", LOAD)))
    assert said is not None and said.startswith("exit 7: 1 figure could not be judged: cpu matmul fp32 512 (")
    assert "0.2 of 2 CPUs" in said and "nothing failed" in said and "\n" not in said


def test_exit_7_counts_past_the_first_two() -> None:
    many = [
        verdict("INCONCLUSIVE", f"f{i}", explanation=f"f{i}: could not be judged: load {i}; next: x") for i in range(4)
    ]
    said = exit_line(7, report(7, *many))
    assert said is not None and "4 figures could not be judged: f0 (load 0); f1 (load 1); and 2 more" in said


def test_exit_1_and_3_and_a_strict_warn() -> None:
    assert exit_line(1, report(1, verdict("FAIL", "best-bf16", "SM clock at 60%"))) == (
        "exit 1: 1 verdict failed the run: best-bf16 (SM clock at 60%)"
    )
    strict = report(1, verdict("WARN", "noise"))
    strict["run"]["strict"] = True
    assert (exit_line(1, strict) or "").startswith("exit 1: 1 WARN verdict under --strict failed the run")
    assert (exit_line(3, report(3, verdict("CRASH", "stage")))) == "exit 3: 1 stage crashed or timed out: stage (x)"


def test_exit_0_says_nothing() -> None:
    assert exit_line(0, report(0, verdict("PASS", "a"))) is None


def test_the_markdown_status_says_what_exit_7_means() -> None:
    """Failed on the old code: 'complete (exit code 7; 0 verdicts fail the run)'."""
    said = _status(report(7, verdict("INCONCLUSIVE", "cpu matmul fp32 512", LOAD)), "")
    assert said.startswith("complete (exit code 7: 1 figure could not be judged") and "fail the run" not in said
    assert _status(report(0, verdict("PASS", "a")), "") == "complete (exit code 0; 0 verdicts fail the run)"


def cpu_figure(value: float, disturbed: bool) -> Measurement:
    conditions: dict[str, Any] = {"samples": 12, "trust": "TRUSTED", "trust_reasons": [], "trust_outside": []}
    if disturbed:
        conditions |= {"trust": "SUSPECT", "trust_reasons": [LOAD], "trust_outside": [LOAD]}
    return Measurement("matmul", "matmul fp32 512", value, "GFLOP/s", 1.0, 10, "cpu", {"bound": "host"}, conditions)


def test_a_disturbed_figure_that_meets_its_expectation_passes_with_the_disturbance_noted() -> None:
    """Failed on the old code: 1.44x of its reference with 0.2 CPUs of others' load was INCONCLUSIVE."""
    expectation = Expectation(100.0, "its reference", "cpu")
    above = judge(cpu_figure(144.0, True), Status.PASS, expectation)
    assert above.status == Status.PASS and "measured while disturbed" in above.words and "0.2 of 2 CPUs" in above.words
    below = judge(cpu_figure(40.0, True), Status.WARN, expectation)
    assert below.status == Status.INCONCLUSIVE and below.numbers["would_be"] == "WARN"
    clean = judge(cpu_figure(144.0, False), Status.PASS, expectation)
    assert clean.status == Status.PASS and clean.words == ""


def test_a_stored_health_check_says_its_own_state_not_figures() -> None:
    """`rigcheck check` keeps a run (profile passive); its export said "exit code 7: a figure could not be judged;
    nothing failed" for a check that timed out, where no figure was ever measured."""
    said = "UNKNOWN: the check did not finish in 2 s (a wedged driver?)"
    check = report(7, verdict("TIMEOUT", "finished", explanation="the check did not finish in 2 s"))
    check["run"]["profile"] = "passive"
    check["facts"] = {"health": {"gate": {"state": "UNKNOWN", "summary": said}}}
    assert exit_line(7, check) == f"exit 7: the health check said {said}"
    assert "figure" not in _status(check, "")
    run = report(7, verdict("INCONCLUSIVE", "best-fp32", cause=LOAD))  # a run keeps its own words
    assert exit_line(7, run).startswith("exit 7: 1 figure could not be judged: best-fp32")
