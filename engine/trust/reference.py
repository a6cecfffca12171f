"""After a stage: each GPU figure against what its model achieves (engine/measure/references.py) or against the
user's own baseline, so that a lone slow GPU is named before any peer or earlier run exists to compare it with.

Standard library only: the parent runs it on the annotated figures; no torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.measure.references import FAIL_BELOW, WARN_BELOW, Reference, baseline_reference, grade
from rigcheck.engine.trust.cause import Expectation, likely_cause
from rigcheck.engine.trust.cause import vendor_of as cause_vendor
from rigcheck.engine.trust.expect_arch import figure_reference

AGAIN = " again"  # the name's end of a figure the matmul child measured a second time
CPU_NAMED_ONLY = "a CPU figure is named, never failed: the host's CPUs are shared with all it runs"


def baseline_cpu() -> str:
    """This host's CPU as a baseline names it (engine/report/baseline.py's cpu_model): `AMD EPYC (2 CPUs)`."""
    from rigcheck.engine.facts.host import cpu_facts  # reads /proc/cpuinfo: only where a baseline is given

    cpu = cpu_facts()
    cpus = cpu.get("usable_cpus") or cpu.get("logical_cpus")
    return f"{cpu['model']} ({cpus} CPUs)" if cpus else str(cpu["model"])


def cpu_baseline_reference(m: Measurement, baseline: dict[str, Any] | None, cpu_name: str) -> Reference | None:
    """The baseline's figure for a CPU figure on this host's CPU (its model and CPU count); None otherwise."""
    if not baseline or m.device != "cpu" or not cpu_name:
        return None
    return baseline_reference(baseline, cpu_name, m.name.removesuffix(AGAIN))


def vendor_of(name: str) -> str:
    """Which vendor's tools the next step names (kept for callers; the cause module decides)."""
    return cause_vendor(name)


def device_model(m: Measurement) -> str | None:
    """The device's name as telemetry (or the stage itself) saw it; None for a CPU figure or where unknown."""
    if not m.device.startswith("cuda"):
        return None
    name = (m.conditions or {}).get("gpu_name") or m.params.get("gpu_name") or m.params.get("device_name")
    return str(name) if name else None


def cause_and_next(m: Measurement, vendor: str = "nvidia", expectation: Expectation | None = None) -> tuple[str, str]:
    """The figure's likely cause and next step: the one cause function's (engine/trust/cause.py)."""
    found = likely_cause(m, expectation)
    return found.text, found.next_step


def reference_verdict(m: Measurement, reference: Reference | None, stage: str | None = None) -> Verdict | None:
    """The rule, for one figure and its model's reference: FAIL below half, WARN below the entry's own band
    (`warn_below`: 15% below for most, 30% for training), else PASS.
    None where there is no reference or the figure is no result. INCONCLUSIVE where the figure's cause lies
    outside the GPU (someone else's load, a setting in force): it can then neither pass nor fail the GPU."""
    if reference is None or m.params.get("broken") or m.params.get("launch_bound") or m.value <= 0:
        return None
    if reference.unit and m.unit and reference.unit != m.unit:
        return None
    status, share = grade(m.value, reference)
    where = m.device or "?"
    head = f"{where} {m.name} {m.value:,.4g} {m.unit}, {share:.0%} of {reference.cite()}"
    numbers = {
        "device": where,
        "value": m.value,
        "reference": reference.value,
        "share": round(share, 4),
        "model": reference.model,
        "kind": reference.kind,
        "source": reference.source,
        "basis": reference.short,  # what it was judged against: its model's entry, or its architecture's share
        "derived": reference.kind == "expected",
    }
    band = 1 - reference.warn_below  # the entry's own tolerance
    found = likely_cause(m, Expectation(reference.value, reference.cite(), reference.kind))
    numbers |= found.numbers()
    if found.unjudgeable(status):
        # someone else's load, or a setting, shaped the figure: it says nothing of the GPU
        return Verdict(
            stage or m.stage,
            f"reference {m.name}",
            Status.INCONCLUSIVE,
            f"{head}: {found.unjudged_words()}",
            numbers,
            band,
            where,
        )
    if status == Status.PASS:
        named = "" if found.judges_hardware else f"; {found.text}"  # a setting in force, though it passed
        return Verdict(stage or m.stage, f"reference {m.name}", status, head + named, numbers, band, where)
    rule = "below half of it" if status == Status.FAIL else f"more than {band:.0%} below it"
    return Verdict(
        stage or m.stage,
        f"reference {m.name}",
        status,
        f"{head}: {rule}; {found.words()}",
        numbers,
        band,
        where,
    )


def reference_verdicts(
    figures: Iterable[Measurement], stage: str, baseline: dict[str, Any] | None = None, cpu_name: str | None = None
) -> Iterator[Verdict]:
    """A WARN or FAIL for each GPU figure too far below its model's reference (or the baseline's), and each CPU
    figure the baseline names for this host's CPU (`cpu_name`, as a baseline names it; a WARN at worst), then one
    PASS saying what was compared where none was. Nothing at all where no figure has a reference."""
    judged: list[Verdict] = []
    figures = list(figures)
    if cpu_name is None:
        cpu_name = baseline_cpu() if baseline and any(m.device == "cpu" for m in figures) else ""
    again = {(m.device, m.name.removesuffix(AGAIN)) for m in figures if m.name.endswith(AGAIN)}
    for m in figures:
        if (m.device, m.name) in again:
            continue  # a figure measured again is judged by its second measurement, taken once the GPU was idle
        if device_model(m) is not None:
            verdict = reference_verdict(m, figure_reference(m, baseline), stage)
        else:
            verdict = cpu_named_only(reference_verdict(m, cpu_baseline_reference(m, baseline, cpu_name), stage))
        if verdict is not None:
            judged.append(verdict)
    if not judged:
        return
    slow = [v for v in judged if v.status != Status.PASS]
    yield from slow
    if not slow:
        against = "the baseline's" if all(v.numbers["kind"] == "baseline" for v in judged) else "their model's"
        derived = sum(bool(v.numbers.get("derived")) for v in judged)
        if derived:  # issue 40: a share its architecture's measured models reach, carried to this GPU's peaks
            against = "their architecture's" if derived == len(judged) else "their model's or their architecture's"
        models = ", ".join(sorted({str(v.numbers["model"]) for v in judged}))
        bands = sorted({round(v.tolerance if v.tolerance is not None else 1 - WARN_BELOW, 4) for v in judged})
        within = f"{bands[0]:.0%}" if len(bands) == 1 else f"their entries' bands ({bands[0]:.0%}-{bands[-1]:.0%})"
        yield Verdict(
            stage,
            "reference",
            Status.PASS,
            f"{len(judged)} figure(s) within {within} of {against} reference figures ({models}); "
            f"below {FAIL_BELOW:.0%} of one would be a FAIL",
            {"compared": len(judged), "models": models, "derived": derived},
            tolerance=bands[-1],
        )


def cpu_named_only(verdict: Verdict | None) -> Verdict | None:
    """A CPU figure's verdict against a baseline, a FAIL made a WARN (as trust/expect_cpu.py does)."""
    if verdict is None or verdict.status != Status.FAIL:
        return verdict
    return replace(verdict, status=Status.WARN, explanation=f"{verdict.explanation} ({CPU_NAMED_ONLY})")
