"""The one expectation a GPU figure is judged against, and on what basis: the baseline's or its model's own entry
first (engine/measure/references.py), else the share its architecture's measured models reach of their peaks,
carried to this GPU's peaks derived from what its driver reports (engine/measure/arch_shares.py); else none, and why.

Standard library only: the parent runs it on the annotated figures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Measurement
from rigcheck.engine.measure.arch_peaks import props_of
from rigcheck.engine.measure.arch_shares import Expected, classify, expected, own_reference
from rigcheck.engine.measure.references import Reference, model_of, reference_for

AGAIN = " again"


@dataclass(frozen=True)
class FigureExpectation:
    """What one figure was expected to reach: value, basis, source and its ratio to it; or why nothing."""

    value: float | None
    basis: str  # "H200 rigcheck-measured, 3 runs", "Hopper share of the derived peak (...)", "none: <why>"
    source: str
    ratio: float | None
    derived: bool
    reference: Reference | None = None


def _device_name(m: Measurement) -> str | None:
    if not m.device.startswith("cuda"):
        return None
    name = (m.conditions or {}).get("gpu_name") or m.params.get("gpu_name") or m.params.get("device_name")
    return str(name) if name else None


def figure_expectation(m: Measurement, baseline: dict[str, Any] | None = None) -> FigureExpectation:
    """The figure's expectation: baseline, its model's own entry, or its architecture's carried share."""
    name = _device_name(m)
    figure = m.name.removesuffix(AGAIN)
    if name is None:
        return FigureExpectation(None, "none: not a GPU figure, or its GPU is unnamed", "", None, False)
    props = props_of(m.params, m.conditions)
    units, arch = (props.units, props.arch) if props else (None, None)
    own = reference_for(name, figure, baseline, units, arch)
    model = model_of(name, units, arch)
    if own is None and model is not None:
        own = own_reference(model.key, figure)
    if own is not None:
        basis = own.short if own.kind != "baseline" else "the baseline"
        return FigureExpectation(own.value, f"{own.model} {basis}", own.source, _ratio(m, own.value), False, own)
    if props is None:
        why = "its stage did not record the GPU's architecture, SMs and clocks" if classify(figure) else "no share holds it"
        return FigureExpectation(None, f"none: no entry for {name} and {why}", "", None, False)
    found = expected(figure, props, model.key if model else None)
    if not isinstance(found, Expected):
        return FigureExpectation(None, f"none: {found.reason}", "", None, False)
    reference = found.reference(model.key if model else name, figure)
    return FigureExpectation(found.value, found.basis, reference.source, _ratio(m, found.value), True, reference)


def _ratio(m: Measurement, value: float) -> float | None:
    return round(m.value / value, 4) if value and m.value > 0 else None


def figure_reference(m: Measurement, baseline: dict[str, Any] | None = None) -> Reference | None:
    """The reference the figure is judged by (an expectation in the reference's shape); None where none exists."""
    return figure_expectation(m, baseline).reference
