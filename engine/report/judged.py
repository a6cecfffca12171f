"""The run's count of figures judged against a reference, of those that had one but could not be judged (their
verdict INCONCLUSIVE: someone else's load, a setting in force), and of those that had none, from each stage's
"expectations" verdict (engine/trust/expectations.py) and the verdicts on single figures: one line for the end
of a run."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

# the verdicts on one figure against a reference (model table, baseline, link, CPU share, roofline): "<kind> <figure>"
AGAINST_A_REFERENCE = ("reference ", "link ", "cpu ", "roofline ")


class Counts(NamedTuple):
    judged: int  # had a reference, and its verdict judged it (PASS, WARN or FAIL)
    not_judged: int  # no reference for its model: peers and history only
    unjudgeable: int  # had a reference, but could not be judged (INCONCLUSIVE)


def verdict_numbers(verdict: dict[str, Any]) -> dict[str, Any]:
    """A stored verdict's numbers as a dict, whether the report holds them decoded or as JSON text; {} for any
    other shape."""
    numbers = verdict.get("numbers") or {}
    if isinstance(numbers, str):
        try:
            numbers = json.loads(numbers)
        except ValueError:
            return {}
    return dict(numbers) if isinstance(numbers, dict) else {}


def judged_counts(report: dict[str, Any]) -> Counts:
    """The counts over the run's stages; a figure with a reference whose verdict was INCONCLUSIVE is not judged."""
    counted = missing = 0
    unjudged: dict[str, set[tuple[str, str]]] = {}
    for verdict in report.get("verdicts", []):
        check = str(verdict.get("check_name") or "")
        if check == "expectations":
            numbers = verdict_numbers(verdict)
            counted += int(numbers.get("judged", 0))
            missing += int(numbers.get("not_judged", 0))
        elif verdict.get("status") == "INCONCLUSIVE" and check.startswith(AGAINST_A_REFERENCE):
            figure = check.split(" ", 1)[1]
            unjudged.setdefault(str(verdict.get("stage") or ""), set()).add((str(verdict.get("device") or ""), figure))
    inconclusive = min(counted, sum(len(figures) for figures in unjudged.values()))
    return Counts(counted - inconclusive, missing, inconclusive)


def judged_line(report: dict[str, Any]) -> str | None:
    """'figures against a reference: 29 judged, 2 could not be judged (...), 9 not judged (...)'; None where none
    was counted."""
    judged, missing, inconclusive = judged_counts(report)
    if not judged and not missing and not inconclusive:
        return None
    line = f"figures against a reference: {judged} judged"
    if inconclusive:
        line += f", {inconclusive} could not be judged (someone else's load or a setting in force)"
    if missing:
        line += f", {missing} not judged (no reference for their model: peers and history only)"
    return line
