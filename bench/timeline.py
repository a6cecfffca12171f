"""Where a run's seconds go: every stored event of a run with its offset from the run's start, and the gaps.

Reads the SQLite store directly (no rigcheck import), so it also reads a store written by other code.
Usage: python3 bench/timeline.py STORE.db [RUN_ID ...] [--min-gap S]; without RUN_IDs, every run in it.
"""

from __future__ import annotations

import json
import sqlite3
import sys


def describe(kind: str, payload: dict) -> str:
    """A short line for one event: what it says, as much as fits."""
    for key in ("message", "what", "name", "check", "explanation", "status", "text"):
        value = payload.get(key)
        if isinstance(value, str) and value:
            return f"{key}={value[:70]}"
    return ",".join(sorted(payload))[:70]


def timeline(db: sqlite3.Connection, run_id: int, min_gap: float) -> None:
    run = db.execute("SELECT started, finished, device, profile FROM runs WHERE id = ?", (run_id,)).fetchone()
    started, finished, device, profile = run
    print(f"== run {run_id} on {device}, profile {profile}: {(finished or started) - started:.1f} s in store")
    rows = db.execute("SELECT stage, kind, t, payload FROM events WHERE run_id = ? ORDER BY t, id", (run_id,))
    previous = started
    for stage, kind, t, payload in rows:
        gap = t - previous
        if gap >= min_gap or kind in ("StageStarted", "StageFinished"):
            what = describe(kind, json.loads(payload))
            print(f"{t - started:7.2f} +{gap:6.2f}  {stage or '-':10} {kind:13} {what}")
        previous = t
    for name, s, f in db.execute(
        "SELECT name, started, finished FROM stages WHERE run_id = ? ORDER BY started", (run_id,)
    ):
        print(f"   stage {name:10} " + (f"{f - s:6.2f} s" if s and f else "  (no child)"))


def main(argv: list[str]) -> None:
    min_gap = 0.25
    if "--min-gap" in argv:
        at = argv.index("--min-gap")
        min_gap = float(argv[at + 1])
        del argv[at : at + 2]
    db = sqlite3.connect(argv[0])
    runs = [int(a) for a in argv[1:]] or [r[0] for r in db.execute("SELECT id FROM runs ORDER BY id")]
    for run_id in runs:
        timeline(db, run_id, min_gap)


if __name__ == "__main__":
    main(sys.argv[1:])
