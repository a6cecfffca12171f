"""A stored run's figures as the HTML report shows them: each with its reference where one exists, and the GPUs
of one model side by side, by the same rules the run judged them with (trust.reference, trust.peers).

Plain data: html_tables and html_plots render it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Measurement
from rigcheck.engine.report.rows import Row
from rigcheck.engine.trust.expect_arch import figure_reference
from rigcheck.engine.trust.judgement import trust_word
from rigcheck.engine.trust.peers import PEER_TOLERANCE, peer_groups
from rigcheck.engine.trust.reference import device_model, reference_verdict


@dataclass(frozen=True)
class Against:
    """A figure against its reference: what share of it, whose, and where that number comes from."""

    value: float
    unit: str
    share: float
    status: str  # PASS, WARN or FAIL by the reference rule; INCONCLUSIVE where its cause lies outside the GPU
    cited: str  # "the H200's rigcheck-measured 756"
    source: str


@dataclass(frozen=True)
class Bar:
    label: str  # the device, or "host device" in a fleet
    value: float
    trust: str
    slow: bool  # more than the tolerance below the best of the others


@dataclass(frozen=True)
class PeerGroup:
    model: str
    name: str
    unit: str
    tolerance: float
    bars: tuple[Bar, ...]


def measurement_of(row: dict[str, Any]) -> Measurement:
    """A stored figure as the engine's Measurement, for the rules that judge figures."""
    return Measurement(
        stage=str(row.get("stage") or ""),
        name=str(row.get("name") or ""),
        value=float(row.get("value") or 0.0),
        unit=str(row.get("unit") or ""),
        spread=row.get("spread"),
        repeats=int(row.get("repeats") or 1),
        device=str(row.get("device") or ""),
        params=dict(row.get("params") or {}),
        conditions=dict(row.get("conditions") or {}),
    )


def _stored_references(verdicts: list[dict[str, Any]]) -> dict[tuple[str, str, str], tuple[dict[str, Any], str]]:
    """What the run itself wrote for each figure it judged (a baseline's figure among them), with the verdict's
    status, by (host, device, figure name)."""
    found = {}
    for v in verdicts:
        numbers = v.get("numbers") or {}
        name = str(v.get("check_name") or "")
        if name.startswith("reference ") and isinstance(numbers.get("reference"), int | float):
            where = str(numbers.get("device") or v.get("device") or "")
            found[(v.get("host") or "", where, name.removeprefix("reference "))] = (numbers, str(v["status"]))
    return found


def _cited(numbers: dict[str, Any]) -> str:
    if numbers.get("kind") == "baseline":
        return f"the baseline's {numbers['reference']:,.4g} for {numbers.get('model', '?')}"
    return f"the {numbers.get('model', '?')}'s {numbers.get('kind', 'reference')} {numbers['reference']:,.4g}"


def references(report: dict[str, Any]) -> dict[int, Against]:
    """Each figure's reference, by the figure's row id: the run's own verdict where it wrote one, else the
    model table's. A figure with no reference (a CPU figure, an unknown GPU) is absent."""
    stored = _stored_references(report["verdicts"])
    out: dict[int, Against] = {}
    for row in report["measurements"]:
        m = measurement_of(row)
        found = stored.get((row.get("host") or "", m.device, m.name))
        if found is not None:
            numbers, status = found
        else:
            model = device_model(m)
            verdict = reference_verdict(m, figure_reference(m)) if model else None  # its model's, or its arch's
            if verdict is None:
                continue
            numbers, status = verdict.numbers, verdict.status.value
        share = numbers.get("share")
        out[row["id"]] = Against(
            float(numbers["reference"]),
            m.unit,
            float(share) if isinstance(share, int | float) else m.value / float(numbers["reference"]),
            status,
            _cited(numbers),
            str(numbers.get("source") or ""),
        )
    return out


def _tolerance(verdicts: list[dict[str, Any]]) -> float:
    """The tolerance the run compared peers with (`--peer-tolerance`), as its peer verdicts recorded it."""
    for v in verdicts:
        if str(v.get("check_name") or "").startswith("peers") and isinstance(v.get("tolerance"), int | float):
            return float(v["tolerance"])
    return PEER_TOLERANCE


def _label(row: Row) -> str:
    return f"{row['host']} {row['device']}" if row.get("host") else str(row.get("device") or "")


def peers(report: dict[str, Any]) -> list[PeerGroup]:
    """Each figure that two or more GPUs of one model measured (where the GPU was the bottleneck), GPU by GPU:
    on one host, or across a fleet's hosts."""
    tolerance = _tolerance(report["verdicts"])
    figures = [(_label(row), measurement_of(row)) for row in report["measurements"]]
    groups = []
    for (model, name), per_unit in sorted(peer_groups(figures).items()):
        if len(per_unit) < 2:
            continue
        values = {unit: m.value for unit, m in per_unit.items()}
        bars = []
        for unit, m in sorted(per_unit.items()):
            others = [v for u, v in values.items() if u != unit]
            bars.append(Bar(unit, m.value, trust_word(m.conditions) or "", m.value < (1 - tolerance) * max(others)))
        unit_word = next(iter(per_unit.values())).unit
        groups.append(PeerGroup(model, name, unit_word, tolerance, tuple(bars)))
    return groups
