"""The run's count of figures judged against a reference and of those that had none, from each stage's
"expectations" verdict (engine/trust/expectations.py): one line for the end of a run."""

from __future__ import annotations

import json
from typing import Any


def judged_counts(report: dict[str, Any]) -> tuple[int, int]:
    """(judged, not judged) over the run's stages."""
    judged = missing = 0
    for verdict in report.get("verdicts", []):
        if verdict.get("check_name") != "expectations":
            continue
        numbers = verdict.get("numbers") or {}
        if isinstance(numbers, str):
            numbers = json.loads(numbers or "{}")
        judged += int(numbers.get("judged", 0))
        missing += int(numbers.get("not_judged", 0))
    return judged, missing


def judged_line(report: dict[str, Any]) -> str | None:
    """'figures against a reference: 31 judged, 9 not (peers and history only)'; None where none was counted."""
    judged, missing = judged_counts(report)
    if not judged and not missing:
        return None
    tail = f", {missing} not (no reference for their model: peers and history only)" if missing else ""
    return f"figures against a reference: {judged} judged{tail}"
