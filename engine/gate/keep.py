"""The gate's memory: each check kept as a short run, pruned to a bounded health timeline (what changed, and when).

A check whose findings match the one before it and the one before that adds nothing to the timeline: the
middle one is dropped, so a run of identical checks keeps its first (since when) and its last (until when).
At most MAX_CHECKS checks are kept on a host. Keeping is a bonus after the gate has judged and acted: a store
that cannot be written costs the memory, never the answer.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

from rigcheck.engine.events import Facts, StageFinished, StageStarted, Status, worst
from rigcheck.engine.gate.memory import block, point
from rigcheck.engine.stages.health.checks import STAGE

PROFILE = "passive"  # the run's profile in the store: how `history` and exports tell a gate check apart
MAX_CHECKS = 2000  # a week of checks every 5 minutes where each differs; unchanged ones are pruned long before
RUN_TABLES = ("events", "measurements", "verdicts", "facts", "samples", "stages")


def signature(facts: dict[str, Any]) -> str:
    """What the timeline tells apart: the state, its line, and each GPU's counters that history compares."""
    gate = block(facts.get("gate"))
    gpus = []
    for gpu in facts.get("gpus") or []:
        if isinstance(gpu, dict):
            try:
                p = point(0, 0.0, gpu)
            except (TypeError, ValueError):
                return "unreadable"
            gpus.append([gpu.get("uuid"), p.corrected, p.remapped, p.width, p.max_gen, list(p.xids)])
    return json.dumps([gate.get("state"), gate.get("summary"), gpus], sort_keys=True, default=str)


def keep_check(store: Any, state_code: int, verdicts: list[Any], facts: dict[str, Any], argv: list[str]) -> int:
    """Store one check as a run and prune the timeline; the run's id."""
    run_id = int(store.begin_run([STAGE], "all", PROFILE, sys.executable, argv))
    store.record(run_id, StageStarted(STAGE, "all", os.getpid(), sys.executable))
    store.record(run_id, Facts(STAGE, facts))
    for item in verdicts:
        store.record(run_id, item)
    store.record(run_id, StageFinished(STAGE, worst(v.status for v in verdicts) or Status.SKIP, 0))
    store.end_run(run_id, "complete", state_code)
    prune(store, run_id)
    return run_id


def _checks(store: Any, limit: int) -> list[tuple[int, str]]:
    rows = store._read(  # the store has no reader for this: one read-only query
        "SELECT r.id AS id, f.data AS data FROM runs r LEFT JOIN facts f ON f.run_id = r.id AND f.stage = ?"
        " AND f.host = '' WHERE r.profile = ? AND r.host = ? ORDER BY r.id DESC LIMIT ?",
        (STAGE, PROFILE, socket.gethostname(), limit),
    )
    out = []
    for row in rows:
        try:
            data = json.loads(row["data"] or "{}")
        except ValueError:
            data = {}
        out.append((int(row["id"]), signature(data) if isinstance(data, dict) else "unreadable"))
    return out


def drop_runs(store: Any, run_ids: list[int]) -> None:
    """Remove these runs and everything recorded under them, in one transaction."""
    if not run_ids:
        return
    marks = ", ".join("?" * len(run_ids))
    with store.transaction():
        for table in RUN_TABLES:
            store._write(f"DELETE FROM {table} WHERE run_id IN ({marks})", tuple(run_ids))
        store._write(f"DELETE FROM runs WHERE id IN ({marks})", tuple(run_ids))


def prune(store: Any, newest: int) -> list[int]:
    """Drop the check before `newest` where it repeats both its neighbours, and any beyond MAX_CHECKS; the ids
    dropped."""
    recent = _checks(store, 3)
    dropped = []
    if len(recent) == 3 and recent[0][0] == newest and recent[0][1] == recent[1][1] == recent[2][1]:
        dropped.append(recent[1][0])
    over = store._read(
        "SELECT id FROM runs WHERE profile = ? AND host = ? ORDER BY id DESC LIMIT -1 OFFSET ?",
        (PROFILE, socket.gethostname(), MAX_CHECKS),
    )
    dropped += [int(row["id"]) for row in over]
    drop_runs(store, dropped)
    return dropped
