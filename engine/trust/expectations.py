"""After a stage: every figure against what it should be, beside the model-table verdicts (trust/reference.py)
and the peers (trust/peers.py): pinned host copies against their link, each figure against its own clean history,
and one count of the figures judged against a reference and those that had none.

A figure with no reference is never a PASS: it is counted, and named, as judged against peers and history only.
Standard library only: the parent runs it on the annotated figures.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.facts.cpu_reference import this_capability
from rigcheck.engine.trust.expect_arch import figure_expectation, figure_reference
from rigcheck.engine.trust.expect_cpu import cpu_reference, cpu_verdict, this_cpu
from rigcheck.engine.trust.expect_link import link_of, link_verdict
from rigcheck.engine.trust.expect_training import training_verdict
from rigcheck.engine.trust.history import History, history_verdicts
from rigcheck.engine.trust.reference import baseline_cpu as this_baseline_cpu
from rigcheck.engine.trust.reference import cpu_baseline_reference, device_model

NO_REFERENCE = "no reference for this model; judged against peers and history only"
RATES = ("TFLOP/s", "GFLOP/s", "GB/s", "samples/s")  # the figures a reference could hold: rates, not errors or times


def judgeable(m: Measurement) -> bool:
    """A figure that stands as a result and says something about the hardware: whole, not launch-bound, and not a
    pageable copy (those measure the host's page cache and staging, which no reference can hold)."""
    if m.unit not in RATES or m.params.get("broken") or m.params.get("launch_bound") or m.value <= 0:
        return False
    return not (m.params.get("bound") == "link" and not m.params.get("pinned"))


def has_reference(m: Measurement, baseline: dict[str, Any] | None, cpu_name: str = "", baseline_cpu: str = "") -> bool:
    """Whether some reference judges it: the model table or the baseline, its link (a pinned host copy), or its
    CPU model's achievable share (a CPU matmul with a limit), or the baseline's figure for this CPU (`baseline_cpu`:
    this CPU as a baseline names it)."""
    if m.device == "cpu":
        if cpu_baseline_reference(m, baseline, baseline_cpu) is not None:
            return True
        return bool(m.params.get("limit")) and cpu_reference(m, cpu_name) is not None
    if device_model(m) is not None and figure_reference(m, baseline) is not None:
        return True  # its model's entry, the baseline's, or its architecture's share of its derived peak
    link = link_of(m)
    return m.params.get("bound") == "link" and bool(link["max_gen"] and link["max_width"])


def coverage_verdict(
    figures: list[Measurement],
    stage: str,
    baseline: dict[str, Any] | None,
    cpu_name: str = "",
    judged_here: frozenset[tuple[str, str]] = frozenset(),
    baseline_cpu: str = "",
) -> Verdict | None:
    """How many of the stage's figures were judged against a reference, and which were not: NOT JUDGED where any
    had none (never a PASS, never a SKIP: they were measured).
    `judged_here`: (device, name) of figures this module judged otherwise (a roofline)."""
    counted = [m for m in figures if judgeable(m)]
    if not counted:
        return None
    missing = [
        m
        for m in counted
        if (m.device, m.name) not in judged_here and not has_reference(m, baseline, cpu_name, baseline_cpu)
    ]
    numbers = {"judged": len(counted) - len(missing), "not_judged": len(missing), "figures": len(counted)}
    if not missing:
        text = f"all {len(counted)} figure(s) judged against a reference (model table, baseline or link)"
        return Verdict(stage, "expectations", Status.PASS, text, numbers)
    models = sorted({device_model(m) or ((cpu_name or "this CPU") if m.device == "cpu" else m.device) for m in missing})
    shown = ", ".join(f"{m.device} {m.name}" for m in missing[:6]) + (" ..." if len(missing) > 6 else "")
    whys = sorted({figure_expectation(m, baseline).basis.removeprefix("none: ") for m in missing if m.device != "cpu"})
    if any(m.device == "cpu" for m in missing):  # a CPU is known by its units, not its brand (issue 40)
        whys.insert(0, f"no CPU with {this_capability()} units has a measured share of its limit")
    if whys:
        shown += f" (why: {'; '.join(whys[:3])})"
    text = (
        f"{len(missing)} of {len(counted)} figure(s) not judged against a reference ({', '.join(models)}): "
        f"{NO_REFERENCE}: {shown}"
    )
    return Verdict(stage, "expectations", Status.NOT_JUDGED, text, numbers | {"models": models})


def declared_band(m: Measurement, baseline: dict[str, Any] | None, cpu_name: str) -> float:
    """How far the figure's own expectation lets it move run to run (1 - its entry's warn_below); 0 where none."""
    found = cpu_reference(m, cpu_name) if m.device == "cpu" else figure_reference(m, baseline)
    return 1.0 - found.warn_below if found is not None else 0.0


# A burn's figures are judged against the burn's own first minutes (stages/burn/verdicts.py), never a table's
# reference: no "not judged against a reference" count for them.
UNREFERENCED_STAGES = frozenset({"burn"})


def expectation_verdicts(
    figures: Iterable[Measurement],
    stage: str,
    baseline: dict[str, Any] | None = None,
    history: History | None = None,
    cpu_name: str | None = None,
    run_figures: list[Measurement] | None = None,
) -> Iterator[Verdict]:
    """Link verdicts for pinned host copies, CPU matmul verdicts and roofline verdicts for training figures with no
    reference (each, PASS included: they say what was expected), history drift WARNs, then the stage's count of
    figures judged and not judged. `run_figures`: every figure of the run so far (the roofline's inputs)."""
    figures = list(figures)
    if cpu_name is None:
        cpu_name = this_cpu() if any(m.device == "cpu" for m in figures) else ""
    cpu_of_baseline = this_baseline_cpu() if baseline and any(m.device == "cpu" for m in figures) else ""
    roofed: set[tuple[str, str]] = set()
    for m in figures:
        if cpu_baseline_reference(m, baseline, cpu_of_baseline) is not None:
            continue  # the baseline takes the table's place: trust/reference.py judges it
        verdict = link_verdict(m, stage) or cpu_verdict(m, stage, cpu_name)
        if verdict is None:
            verdict = training_verdict(m, stage, run_figures if run_figures is not None else figures)
            if verdict is not None:
                roofed.add((m.device, m.name))
        if verdict is not None:
            yield verdict
    yield from history_verdicts(figures, stage, history, lambda m: declared_band(m, baseline, cpu_name or ""))
    if stage in UNREFERENCED_STAGES:
        return
    counted = coverage_verdict(figures, stage, baseline, cpu_name, frozenset(roofed), cpu_of_baseline)
    if counted is not None:
        yield counted
