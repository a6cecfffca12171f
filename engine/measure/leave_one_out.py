"""Leave-one-out over the reference table: each model's own entries predicted with its own entries removed, from its
architecture's siblings and its peaks (arch_shares.py), beside the entry; a prediction outside its declared spread
is a miss. It is how the table shows that its shares generalise, and how a wrong share is caught before a user
meets it (tests/unit/test_leave_one_out.py holds it; bench/leave_one_out.py writes the table to bench/RESULTS.md).

Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigcheck.engine.measure.arch_peaks import DeviceProps, specimen_of, specimen_props
from rigcheck.engine.measure.arch_shares import Expected, classify, expected
from rigcheck.engine.measure.references import REFERENCES, Reference


@dataclass(frozen=True)
class Prediction:
    """One entry against its prediction."""

    model: str
    figure: str
    actual: float
    unit: str
    source: str  # the entry's source in a few words
    predicted: float | None
    spread: float | None
    basis: str  # the prediction's basis, or why there is none

    @property
    def ratio(self) -> float | None:
        """The entry over its prediction: how the rule would grade a figure at exactly the entry's value."""
        return None if self.predicted is None else self.actual / self.predicted

    @property
    def miss(self) -> bool:
        """Outside the declared spread: a healthy figure would be a WARN (below), or a slow one pass (above)."""
        if self.ratio is None or self.spread is None:
            return False
        return not (1 - self.spread) <= self.ratio <= 1 / (1 - self.spread)


def predictable(reference: Reference) -> bool:
    """A GPU entry a share could hold: matmul, max-find, device copy, training (not host links, not baselines, not a
    CPU's entries)."""
    return not reference.figure_kind.startswith("cpu ") and classify(reference.figure) is not None


def predictions(references: tuple[Reference, ...] = REFERENCES) -> list[Prediction]:
    rows = []
    for r in references:
        if not predictable(r):
            continue
        specimen = specimen_of(r.model)
        props = specimen_props(specimen) if specimen else DeviceProps(r.model, "")
        found = expected(r.figure, props, r.model, references)
        if isinstance(found, Expected):
            rows.append(Prediction(r.model, r.figure, r.value, r.unit, r.short, found.value, found.spread, found.basis))
        else:
            rows.append(Prediction(r.model, r.figure, r.value, r.unit, r.short, None, None, found.reason))
    return rows


def table(rows: list[Prediction]) -> str:
    """The rows as a markdown table."""
    lines = [
        "| model | figure | entry | predicted | entry / predicted | spread | result | basis |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for p in rows:
        if p.predicted is None:
            lines.append(f"| {p.model} | {p.figure} | {p.actual:,.4g} | | | | not predicted | {p.basis} |")
            continue
        result = "MISS" if p.miss else "ok"
        lines.append(
            f"| {p.model} | {p.figure} | {p.actual:,.4g} | {p.predicted:,.4g} | {p.ratio:.3f} | "
            f"{p.spread:.0%} | {result} | {p.basis} |"
        )
    return "\n".join(lines)
