"""The earlier clean figures of one figure on one GPU (by UUID) or on the host's CPU, read from the store for
engine/trust/history.py; and the run list with the gate's checks apart from real runs."""

from __future__ import annotations

import json
from typing import Any

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


# The gate's checks (`rigcheck check`, run profile "passive") are a health timeline, not runs: listed apart.
CHECK_PROFILE = "passive"
GATE_STATES = ("OK", "WARN", "CRITICAL", "UNKNOWN")


def real_runs(store: StoreReader, limit: int) -> list[dict[str, Any]]:
    """The newest runs that are not gate checks, as `store.runs` shows them (numbers sane, text inert; `unlisted`
    says which it left out), so a node checked every few minutes still lists its real runs."""
    return store.runs(limit, without_profile=CHECK_PROFILE)


def check_count(store: StoreReader) -> int:
    return int(store._read("SELECT COUNT(*) AS n FROM runs WHERE profile = ?", (CHECK_PROFILE,))[0]["n"])


def checks(store: StoreReader, limit: int) -> list[dict[str, Any]]:
    """The newest gate checks: run id, start, the gate's state (OK, WARN, CRITICAL, UNKNOWN: never a verdict's
    SKIP or FAIL) and its one line, newest first; a check whose facts cannot be read says so."""
    rows = store._read(
        "SELECT r.id AS id, r.started AS started, f.data AS data FROM runs r LEFT JOIN facts f ON f.run_id = r.id"
        " AND f.stage = 'health' AND f.host = '' WHERE r.profile = ? ORDER BY r.id DESC LIMIT ?",
        (CHECK_PROFILE, limit),
    )
    out = []
    for row in rows:
        try:
            gate = json.loads(row["data"] or "{}").get("gate") or {}
        except (ValueError, AttributeError):
            gate = {}
        state = gate.get("state") if gate.get("state") in GATE_STATES else "UNKNOWN"
        summary = gate.get("summary") if isinstance(gate.get("summary"), str) else "(its facts cannot be read)"
        started = row["started"] if isinstance(row["started"], int | float) else None
        out.append({"id": int(row["id"]), "started": started, "state": state, "summary": summary})
    return out
