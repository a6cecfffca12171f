"""The earlier clean figures of one figure on one GPU (by UUID) or on the host's CPU, read from the store for
engine/trust/history.py."""

from __future__ import annotations

import json

from rigcheck.engine.events import Measurement, Trust
from rigcheck.engine.store.read import StoreReader
from rigcheck.engine.trust.history import Past, identity
from rigcheck.engine.trust.judgement import trust_in

DEFAULT_LIMIT = 20


def earlier_clean_figures(store: StoreReader, run_id: int, m: Measurement, limit: int = DEFAULT_LIMIT) -> list[Past]:
    """This figure's TRUSTED values in runs before `run_id`, on the same GPU (or this host's CPU), newest first."""
    wanted = identity(m)
    if wanted is None:
        return []
    rows = store._read(
        "SELECT run_id, value, unit, device, params, conditions FROM measurements "
        "WHERE name = ? AND run_id < ? AND host = '' ORDER BY id DESC LIMIT ?",
        (m.name, run_id, 10 * limit),
    )
    found: list[Past] = []
    for row in rows:
        params, conditions = json.loads(row["params"] or "{}"), json.loads(row["conditions"] or "{}")
        pageable = params.get("bound") == "link" and not params.get("pinned")
        if trust_in(conditions) is not Trust.TRUSTED or params.get("broken") or params.get("launch_bound") or pageable:
            continue
        if (wanted == "cpu" and row["device"] != "cpu") or (wanted != "cpu" and params.get("gpu_uuid") != wanted):
            continue
        found.append(Past(int(row["run_id"]), float(row["value"] or 0.0), str(row["unit"] or "")))
        if len(found) >= limit:
            break
    return found
