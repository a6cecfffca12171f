"""`run --baseline FILE` with a CPU-only run's baseline judges this host's CPU figures against it (issue 43: they were
silently ignored): a WARN at worst (a host's CPUs are shared), and only on the CPU model and count it names."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.facts.host import cpu_facts
from rigcheck.engine.measure.baseline_file import parse_baseline
from rigcheck.engine.report.baseline import cpu_model, to_baseline
from rigcheck.engine.trust.expectations import expectation_verdicts
from rigcheck.engine.trust.reference import reference_verdicts


def cpu_report(model: str = "Test CPU 9000", cpus: int = 2) -> dict[str, Any]:
    """A CPU-only run as the store reports it: Probe's CPU facts and one sound CPU figure."""
    figure = {"name": "matmul fp32 512", "value": 100.0, "unit": "GFLOP/s", "device": "cpu", "host": ""}
    figure |= {"params": {}, "conditions": {"trust": "TRUSTED"}}
    return {
        "run": {"id": 3, "host": "cpu-host", "started": 1764547200.0, "profile": "standard"},
        "facts": {"probe": {"cpu": {"model": model, "usable_cpus": cpus}}},
        "measurements": [figure],
        "verdicts": [],
    }


def cpu_figure(value: float, trust: str = "TRUSTED") -> Measurement:
    return Measurement("matmul", "matmul fp32 512", value, "GFLOP/s", 1.0, 20, "cpu", {}, {"trust": trust})


def judged(value: float, made_on: tuple[str, int] | None = None) -> list[tuple[str, Status]]:
    """The reference verdicts of a CPU figure on this host, against a baseline made on this host's CPU (or on
    `made_on`: another model and CPU count)."""
    here = cpu_facts()
    model, cpus = made_on or (here["model"], here["usable_cpus"])
    baseline = parse_baseline(to_baseline(cpu_report(model, cpus)))
    return [(v.check, v.status) for v in reference_verdicts([cpu_figure(value)], "matmul", baseline)]


def test_a_cpu_figure_is_judged_against_a_cpu_runs_baseline_on_each_side_of_its_band() -> None:
    assert judged(90.0) == [("reference", Status.PASS)]  # 90% of the baseline's 100: inside its 15%
    assert judged(84.0) == [("reference matmul fp32 512", Status.WARN)]  # 84%: just past it
    assert judged(30.0) == [("reference matmul fp32 512", Status.WARN)]  # below half: named, never failed


def test_another_cpu_or_cpu_count_is_not_judged_by_it() -> None:
    here = cpu_facts()
    assert judged(30.0, (here["model"], here["usable_cpus"] + 1)) == [] and judged(30.0, ("Other CPU", 2)) == []


def test_the_baseline_takes_the_tables_place_and_the_figure_counts_as_judged() -> None:
    here = cpu_facts()  # a baseline made on this very host, as a user would make one
    baseline = parse_baseline(to_baseline(cpu_report(here["model"], here["usable_cpus"])))
    judging = list(reference_verdicts([cpu_figure(84.0)], "matmul", baseline))
    assert [(v.check, v.status, v.numbers["kind"]) for v in judging] == [
        ("reference matmul fp32 512", Status.WARN, "baseline")
    ]
    verdicts = list(expectation_verdicts([cpu_figure(84.0)], "matmul", baseline, cpu_name=here["model"]))
    assert not [v for v in verdicts if v.check.startswith("cpu ")]  # the table's CPU verdict: not beside it
    (counted,) = [v for v in verdicts if v.check == "expectations"]
    assert counted.status == Status.PASS and counted.numbers["not_judged"] == 0, counted.explanation


def test_this_host_names_its_cpu_as_its_own_baseline_does() -> None:
    from rigcheck.engine.trust.reference import baseline_cpu

    here = cpu_facts()
    assert baseline_cpu() == cpu_model({"facts": {"probe": {"cpu": here}}})
