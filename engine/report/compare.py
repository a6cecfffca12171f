"""Two stored runs compared figure by figure, without a UI: what `rigcheck compare` and the History screen show.

A ratio is given only where both figures are TRUSTED: a SUSPECT figure was taken under conditions
(power cap, a busy host) that make a ratio against it a statement about the conditions, not the machine.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Trust
from rigcheck.engine.report.rows import signed_spread, trust_of, trust_reasons


@dataclass(frozen=True)
class Side:
    """One run's figure: its value with the spread and the trust label it was stored with."""

    value: float
    unit: str
    spread: float | None
    trust: str
    reasons: tuple[str, ...] = ()
    verified: bool | None = None

    @classmethod
    def of(cls, measurement: dict[str, Any]) -> Side:
        return cls(
            value=measurement["value"],
            unit=measurement["unit"] or "",
            spread=measurement.get("spread"),
            trust=trust_of(measurement),
            reasons=tuple(trust_reasons(measurement)),
            verified=(measurement.get("conditions") or {}).get("verified"),
        )

    def text(self) -> str:
        """`776.1 TFLOP/s ±0.4% TRUSTED` (`, unverified` where Verify has not vouched for the device)."""
        unverified = ", unverified" if self.verified is False else ""
        spread = signed_spread(self.value, self.spread)
        return " ".join(part for part in (f"{self.value:,.4g}", self.unit, spread, self.trust + unverified) if part)


@dataclass(frozen=True)
class Row:
    """One figure in both runs; `ratio` is second / first, None where it would not mean anything."""

    figure: str
    first: Side | None
    second: Side | None
    ratio: float | None
    note: str

    @property
    def sides(self) -> tuple[Side | None, Side | None]:
        return self.first, self.second

    def ratio_text(self) -> str:
        if self.ratio is None:
            return self.note
        return f"{self.ratio:.3f}" + (f" ({self.note})" if self.note else "")


def _figures(report: dict[str, Any]) -> dict[str, Side]:
    """Each figure by `name [device]`; a figure measured twice in one run keeps its last value."""
    return {_label(m): Side.of(m) for m in report["measurements"] if m["value"] is not None}


def _label(measurement: dict[str, Any]) -> str:
    return f"{measurement['name']} [{measurement['device']}]"


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """`at 2 s` before `at 11 s`: runs of digits compare as numbers, the rest as lower-case text."""
    return tuple((0, int(part)) if part.isdigit() else (1, part.lower()) for part in re.split(r"(\d+)", text) if part)


def _order(first: dict[str, Any], second: dict[str, Any]) -> dict[str, tuple[int, str]]:
    """Each figure's stage position (the order the stages ran in, the first run's then the second's) and stage."""
    stages: list[str] = []
    where: dict[str, str] = {}
    for report in (first, second):
        for m in report["measurements"]:
            stage = m.get("stage") or ""
            if stage not in stages:
                stages.append(stage)
            where.setdefault(_label(m), stage)
    return {label: (stages.index(stage), stage) for label, stage in where.items()}


def _why_no_ratio(first: Side | None, second: Side | None, ids: tuple[Any, Any]) -> str:
    if first is None or second is None:
        return f"only in run {ids[0] if second is None else ids[1]}"
    if first.unit != second.unit:
        return f"units differ ({first.unit} / {second.unit})"
    untrusted = [
        f"run {run_id} {side.trust}"
        for run_id, side in zip(ids, (first, second), strict=True)
        if side.trust != Trust.TRUSTED
    ]
    if untrusted:
        return "no ratio: " + ", ".join(untrusted)
    if not first.value:
        return f"no ratio: run {ids[0]} is zero"
    return ""


def compare(first: dict[str, Any], second: dict[str, Any]) -> list[Row]:
    """Every figure either run measured, by stage (in the order they ran) and then in natural order of name
    (`at 2 s` before `at 11 s`), with a ratio where both sides are TRUSTED."""
    ids = (first["run"]["id"], second["run"]["id"])
    a, b = _figures(first), _figures(second)
    order = _order(first, second)
    rows = []
    for figure in sorted(a.keys() | b.keys(), key=lambda label: (order.get(label, (0, ""))[0], natural_key(label))):
        left, right = a.get(figure), b.get(figure)
        why = _why_no_ratio(left, right, ids)
        if why or left is None or right is None:
            rows.append(Row(figure, left, right, None, why))
            continue
        noise = (left.spread or 0.0) + (right.spread or 0.0)
        within = left.spread is not None and right.spread is not None and abs(right.value - left.value) <= noise
        rows.append(Row(figure, left, right, right.value / left.value, "within the spread" if within else ""))
    return rows
