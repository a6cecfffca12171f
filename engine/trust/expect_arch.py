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
from rigcheck.engine.measure.arch_shares import lookup
from rigcheck.engine.measure.references import Reference

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
    if name is None:
        return FigureExpectation(None, "none: not a GPU figure, or its GPU is unnamed", "", None, False)
    found = lookup(name, m.name.removesuffix(AGAIN), props_of(m.params, m.conditions), baseline)
    if isinstance(found, str):
        return FigureExpectation(None, f"none: {found}", "", None, False)
    derived = found.kind == "expected"
    basis = found.short if derived else f"{found.model} {'the baseline' if found.kind == 'baseline' else found.short}"
    return FigureExpectation(found.value, basis, found.source, _ratio(m, found.value), derived, found)


def _ratio(m: Measurement, value: float) -> float | None:
    return round(m.value / value, 4) if value and m.value > 0 else None


def figure_reference(m: Measurement, baseline: dict[str, Any] | None = None) -> Reference | None:
    """The reference the figure is judged by (an expectation in the reference's shape); None where none exists."""
    return figure_expectation(m, baseline).reference
