"""A CPU matmul figure against what its model reaches (trust/expect_cpu.py), word for word and at its edges: the
verdict's numbers, check name, tolerance and device, the figures it leaves alone, and a PASS that never names
its threads (the cases a mutation sample found unpinned, issue 45)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.measure.references import Model, Reference
from rigcheck.engine.trust.expect_cpu import cpu_verdict

EPYC = "AMD EPYC 9454 48-Core Processor"
BASIS = "16 CPUs x 3,800 MHz x 64 fp32 FLOP/cycle"


@pytest.fixture(autouse=True)
def epyc_in_table(monkeypatch: pytest.MonkeyPatch) -> Reference:
    """998 GFLOP/s of a 3,891.2 limit (26%), warned below 0.6 of it, as bench/reference_runs.sh pastes one."""
    from rigcheck.engine.measure import references

    model = Model("AMD EPYC 9454", r"\bEPYC 9454\b", "cpu", peaks={"cpu_fp32": 3891.2}, peak_source="16 CPUs")
    entry = Reference(
        "AMD EPYC 9454", "matmul fp32 512", 998.0, "GFLOP/s", "rigcheck-measured", "x" * 50,
        "rigcheck-measured, 3 runs", "cpu matmul", "512", 3891.2, "cpu_fp32", 0.6,
    )  # fmt: skip
    monkeypatch.setattr(references, "MODELS", (*references.MODELS, model))
    monkeypatch.setattr(references, "REFERENCES", (*references.REFERENCES, entry))
    return entry


def figure(value: float, limit: Any = 3891.2, **params: Any) -> Measurement:
    given: dict[str, Any] = {"bound": "host", "limit": limit, "limit_basis": BASIS, "threads": 16} | params
    return Measurement("matmul", "matmul fp32 512", value, "GFLOP/s", 0.01, 10, "cpu", given, {"trust": "TRUSTED"})


def test_a_pass_its_words_and_numbers() -> None:
    found = cpu_verdict(figure(998.0), "matmul", EPYC)
    assert found is not None and found.status == Status.PASS
    assert (found.stage, found.check, found.device) == ("matmul", "cpu matmul fp32 512", "cpu")
    assert found.tolerance == pytest.approx(0.4)  # 1 - warn_below
    assert found.explanation == (
        f"cpu matmul fp32 512 998 GFLOP/s: 26% of {BASIS} (3,891), against the 26% the AMD EPYC 9454 reaches "
        "(rigcheck-measured, 3 runs): 1.00x of the 998 expected"
    )  # a PASS names no threads and no cause
    n = found.numbers
    assert (n["device"], n["value"], n["expected"], n["ratio"]) == ("cpu", 998.0, 998.0, 1.0)
    assert (n["share_of_limit"], n["achievable"]) == (round(998.0 / 3891.2, 4), round(998.0 / 3891.2, 4))
    assert (n["model"], n["source"]) == ("AMD EPYC 9454", "x" * 50)
    assert n["expectation"] == pytest.approx(998.0)
    assert n["expectation_source"] == f"26% of {BASIS} (rigcheck-measured, 3 runs)"


def test_the_warn_names_its_threads_and_the_edge_is_the_entrys_own() -> None:
    edge = cpu_verdict(figure(0.6 * 998.0), "matmul", EPYC)
    assert edge is not None and edge.status == Status.PASS  # exactly at warn_below: still a PASS
    below = cpu_verdict(figure(0.59 * 998.0, threads=4), "matmul", EPYC)
    assert below is not None and below.status == Status.WARN
    assert "0.59x of the 998 expected with 4 thread(s)" in below.explanation
    no_threads = cpu_verdict(figure(0.59 * 998.0, threads=None), "matmul", EPYC)
    assert no_threads is not None and "thread(s)" not in no_threads.explanation


def test_a_figure_without_a_basis_says_its_limit() -> None:
    found = cpu_verdict(figure(998.0, limit_basis=None), "matmul", EPYC)
    assert found is not None and ": 26% of its limit (3,891), against" in found.explanation


@pytest.mark.parametrize(
    "m",
    [figure(998.0, limit=None), figure(998.0, limit=0), figure(998.0, broken=True), figure(0.0), figure(-1.0)],
    ids=["no limit", "zero limit", "broken", "zero", "negative"],
)
def test_figures_it_leaves_alone(m: Measurement) -> None:
    assert cpu_verdict(m, "matmul", EPYC) is None


def test_a_limit_given_as_text_is_read_as_a_number() -> None:
    found = cpu_verdict(figure(998.0, limit="3891.2"), "matmul", EPYC)
    assert found is not None and found.status == Status.PASS and found.numbers["share_of_limit"] == 0.2565


def test_the_numbers_are_rounded_as_stored(epyc_in_table: Reference) -> None:
    found = cpu_verdict(figure(700.0, limit=3001.77), "matmul", EPYC)
    assert found is not None
    expected = 998.0 / 3891.2 * 3001.77
    assert found.numbers["expected"] == round(expected, 2) == 769.88  # two places, not one or three
    assert found.numbers["ratio"] == round(700.0 / expected, 4) == 0.9092
    assert found.numbers["share_of_limit"] == 0.2332 and found.numbers["achievable"] == 0.2565


def test_the_tolerance_is_what_the_entry_lets_below_it(
    epyc_in_table: Reference, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rigcheck.engine.measure import references

    loose = replace(epyc_in_table, warn_below=0.3)
    monkeypatch.setattr(
        references, "REFERENCES", (*[r for r in references.REFERENCES if r is not epyc_in_table], loose)
    )
    found = cpu_verdict(figure(0.31 * 998.0), "matmul", EPYC)
    assert found is not None and found.status == Status.PASS and found.tolerance == pytest.approx(0.7)
