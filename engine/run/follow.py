"""Following a run through the store: every event the engine wrote, in order, from the first one on.

Each follower has its own read connection; WAL readers never block the engine's writes, and
`PRAGMA data_version` answers "anything new?" without reading a table.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from rigcheck.engine.events import Event, event_from_dict
from rigcheck.engine.store.schema import BUSY_TIMEOUT_S


class Follower:
    """Reads run `run_id`'s events from the store in the order written; poll() returns the new ones."""

    def __init__(self, store_path: Path, run_id: int) -> None:
        self.run_id = run_id
        self._db = sqlite3.connect(store_path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)
        self._db.row_factory = sqlite3.Row
        self._last_id = 0
        self._version: int | None = None

    def poll(self) -> list[Event]:
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if version == self._version:
            return []
        self._version = version
        rows = self._db.execute(
            "SELECT id, payload FROM events WHERE run_id = ? AND id > ? ORDER BY id", (self.run_id, self._last_id)
        ).fetchall()
        events = []
        for row in rows:
            self._last_id = row["id"]
            event = event_from_dict(json.loads(row["payload"]))
            if event is not None:
                events.append(event)
        return events

    def run(self) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM runs WHERE id = ?", (self.run_id,)).fetchone()
        return dict(row) if row is not None else None

    def close(self) -> None:
        self._db.close()
