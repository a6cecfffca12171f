"""A full run's health stage against each GPU's history: the same findings as the passive check's, added by the
run's session (which holds the store) once the stage's facts are in, since the stage's child has no store."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.events import Verdict
from rigcheck.engine.gate.memory import Gpu, compare, gpu_uuid
from rigcheck.engine.gate.passive import earlier_health


def health_history(store: Any, facts: dict[str, Any], run_id: int) -> list[Verdict]:
    """History verdicts for each GPU in a health stage's facts; [] where the store cannot be read."""
    try:
        rows = [(rid, started, data) for rid, started, _, data in earlier_health(store) if rid != run_id]
    except Exception:  # a store held or damaged: the run's own verdicts stand without history
        return []
    found: list[Verdict] = []
    for gpu in facts.get("gpus") or []:
        if isinstance(gpu, dict) and gpu.get("label"):
            found += compare(Gpu(str(gpu["label"]), gpu_uuid(gpu)), gpu, rows)
    return found
