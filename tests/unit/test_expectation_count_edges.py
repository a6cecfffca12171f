"""The stage's one count of figures judged against a reference (engine/trust/expectations.py), at its edges: which
figures are counted at all (launch-bound, broken, zero, pageable copies are not; a pinned copy whose link could not
be read is counted, as not judged), how many missing figures are named before "...", the reason a CPU figure had
none, and a figure read back from the store as the parent reads it. Each number and sentence written out by hand."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status, event_from_dict, event_to_dict
from rigcheck.engine.facts.host import cpu_facts
from rigcheck.engine.measure.baseline_file import parse_baseline
from rigcheck.engine.report.baseline import to_baseline
from rigcheck.engine.trust import expectations
from rigcheck.engine.trust.expectations import coverage_verdict, expectation_verdicts
from rigcheck.engine.trust.reference import baseline_cpu
from test_cpu_baseline import cpu_report
from test_expectations import EPYC, GEN5_X16, copy, cpu_matmul, epyc_in_table, matmul  # noqa: F401 (a fixture)

RTX = "NVIDIA RTX 9999"  # a GPU no table, baseline or architecture knows
RTX_WHY = f"no entry for {RTX}, and its stage recorded no architecture, SMs and clocks to derive one"


def on_rtx(m: Measurement) -> Measurement:
    return replace(m, conditions=m.conditions | {"gpu_name": RTX})


def with_params(m: Measurement, **params: Any) -> Measurement:
    return replace(m, params=m.params | params)


def test_figures_that_are_no_result_are_not_counted_and_a_small_positive_one_is() -> None:
    launch_bound = with_params(matmul(5.0, name="matmul bf16 1024"), launch_bound=True)
    broken = with_params(matmul(770.0), broken=True)
    pageable = copy(20.0, pcie=GEN5_X16, pinned=False)
    for figure in (launch_bound, broken, matmul(0.0), matmul(-1.0), pageable):
        assert coverage_verdict([figure], "matmul", None) is None, figure
    small = coverage_verdict([matmul(0.5)], "matmul", None)  # far below its reference, but a figure: counted
    assert small is not None and small.numbers == {"judged": 1, "not_judged": 0, "figures": 1}


def test_a_mixed_stage_counts_only_its_results_and_names_the_copy_whose_link_was_not_read() -> None:
    figures = [
        matmul(770.0),  # the H200's own entry
        on_rtx(with_params(matmul(5.0, name="matmul bf16 1024"), launch_bound=True)),
        on_rtx(with_params(matmul(70.0, name="matmul fp16 4096"), broken=True)),
        on_rtx(matmul(0.0, name="matmul fp8 4096")),
        on_rtx(copy(20.0, pcie=GEN5_X16, pinned=False)),  # pageable: the host's page cache
        on_rtx(copy(50.0, direction="d2h")),  # pinned, but its link was never read
        on_rtx(copy(55.0, pcie=GEN5_X16)),  # pinned, judged by its link
    ]
    verdict = coverage_verdict(figures, "bandwidth", None)
    assert verdict is not None and verdict.status == Status.NOT_JUDGED
    assert verdict.numbers == {"judged": 2, "not_judged": 1, "figures": 3, "models": [RTX]}
    assert verdict.explanation == (
        f"1 of 3 figure(s) not judged against a reference ({RTX}): no reference for this model; judged against "
        f"peers and history only: cuda:0 device to host pinned 1 GiB (why: {RTX_WHY})"
    )
    half_read = on_rtx(copy(50.0, pcie={"gen": 5, "width": 16, "max_gen": 5, "max_width": 0}))
    assert coverage_verdict([half_read], "bandwidth", None).numbers["not_judged"] == 1  # type: ignore[union-attr]
    no_gen = on_rtx(copy(50.0, pcie={"gen": 5, "width": 16, "max_gen": 0, "max_width": 16}))
    assert coverage_verdict([no_gen], "bandwidth", None).numbers["not_judged"] == 1  # type: ignore[union-attr]


def unknown(count: int) -> list[Measurement]:
    return [on_rtx(matmul(90.0, name=f"matmul bf16 {size}")) for size in range(1, count + 1)]


def test_six_figures_not_judged_are_all_named_and_a_seventh_is_left_to_dots() -> None:
    six = coverage_verdict(unknown(6), "matmul", None)
    named = ", ".join(f"cuda:0 matmul bf16 {size}" for size in range(1, 7))
    assert six is not None and six.explanation.endswith(f"only: {named} (why: {RTX_WHY})")
    seven = coverage_verdict(unknown(7), "matmul", None)
    assert seven is not None and seven.explanation.endswith(f"only: {named} ... (why: {RTX_WHY})")
    assert seven.numbers["not_judged"] == 7 and "matmul bf16 7" not in seven.explanation


def test_a_cpu_figure_with_no_reference_says_its_units_not_a_gpu_s_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(expectations, "this_capability", lambda: "AVX-512")
    cpu = Measurement("matmul", "matmul fp32 512", 900.0, "GFLOP/s", 0.01, 20, "cpu", {"bound": "host"}, {})
    verdict = coverage_verdict([cpu, on_rtx(matmul(90.0))], "matmul", None, "Some CPU")
    assert verdict is not None and verdict.numbers["models"] == [RTX, "Some CPU"]
    assert verdict.explanation.endswith(
        f"only: cpu matmul fp32 512, cuda:0 matmul bf16 4096 (why: no CPU with AVX-512 units has a measured share "
        f"of its limit; {RTX_WHY})"
    )
    alone = coverage_verdict([cpu], "matmul", None)
    assert alone is not None and alone.explanation == (
        "1 of 1 figure(s) not judged against a reference (this CPU): no reference for this model; judged against "
        "peers and history only: cpu matmul fp32 512 (why: no CPU with AVX-512 units has a measured share of its "
        "limit)"
    )


def test_a_cpu_figure_read_back_from_the_store_counts_as_judged_by_this_host_s_baseline() -> None:
    here = cpu_facts()
    baseline = parse_baseline(to_baseline(cpu_report(here["model"], here["usable_cpus"])))
    figure = Measurement("matmul", "matmul fp32 512", 84.0, "GFLOP/s", 1.0, 20, "cpu", {}, {"trust": "TRUSTED"})
    read_back = event_from_dict(json.loads(json.dumps(event_to_dict(figure))))  # its device a new string
    assert isinstance(read_back, Measurement)
    verdict = coverage_verdict([read_back], "matmul", baseline, here["model"], baseline_cpu=baseline_cpu())
    assert verdict is not None and verdict.status == Status.PASS
    assert verdict.numbers == {"judged": 1, "not_judged": 0, "figures": 1}


def test_the_cpu_s_name_is_read_from_the_host_where_the_stage_gives_none(
    monkeypatch: pytest.MonkeyPatch,
    epyc_in_table: object,  # noqa: F811 (the fixture imported above)
) -> None:
    monkeypatch.setattr(expectations, "this_cpu", lambda: EPYC)
    verdicts = list(expectation_verdicts([cpu_matmul(990.0)], "matmul"))
    assert [(v.check, v.status) for v in verdicts] == [
        ("cpu matmul fp32 512", Status.PASS),
        ("expectations", Status.PASS),
    ]


def test_one_judged_of_two_is_counted_as_one() -> None:
    verdict = coverage_verdict([matmul(770.0), on_rtx(matmul(90.0))], "matmul", None)
    assert verdict is not None and verdict.numbers == {"judged": 1, "not_judged": 1, "figures": 2, "models": [RTX]}
    assert verdict.explanation.startswith("1 of 2 figure(s) not judged against a reference (NVIDIA RTX 9999)")


def test_a_cpu_figure_left_to_the_baseline_does_not_end_the_stage_s_other_verdicts() -> None:
    here = cpu_facts()
    baseline = parse_baseline(to_baseline(cpu_report(here["model"], here["usable_cpus"])))
    cpu = Measurement("matmul", "matmul fp32 512", 84.0, "GFLOP/s", 1.0, 20, "cpu", {}, {"trust": "TRUSTED"})
    figures = [cpu, copy(55.2, pcie=GEN5_X16)]
    verdicts = list(expectation_verdicts(figures, "bandwidth", baseline, cpu_name=here["model"]))
    assert [(v.check, v.status) for v in verdicts] == [
        ("link host to device pinned 1 GiB", Status.PASS),
        ("expectations", Status.PASS),
    ]
    assert verdicts[-1].numbers == {"judged": 2, "not_judged": 0, "figures": 2}
