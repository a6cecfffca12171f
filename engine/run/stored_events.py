"""Reading one run's stored events in the order the engine wrote them, through a read connection of its own: what
`follow`, the app and the owner's stream all read the store with.

WAL readers never block the engine's writes, and `PRAGMA data_version` answers "anything new?" without reading a
table. A damaged page is one line (StoreDamaged); a row whose text was damaged is skipped and counted.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from rigcheck.engine.events import Event, event_from_dict
from rigcheck.engine.run.wire import sample_from_dict
from rigcheck.engine.store.errors import StoreDamaged, damaged_message, is_damage
from rigcheck.engine.store.schema import reading_connection
from rigcheck.engine.telemetry.sample import Sample


class Follower:
    """Reads run `run_id`'s events from the store in the order written; poll() returns the new ones."""

    def __init__(self, store_path: Path, run_id: int) -> None:
        self.run_id = run_id
        self.path = Path(store_path)
        self._db = reading_connection(self.path)  # also where a full disk leaves it only readable
        self._db.row_factory = sqlite3.Row
        self.last_id = 0
        self._version: int | None = None
        self.unreadable = 0  # stored rows whose text was damaged: skipped, not fatal

    def _read(self, query: str, args: tuple[Any, ...]) -> list[sqlite3.Row]:
        """A query's rows; a damaged page is StoreDamaged (one line naming the store and .recover)."""
        try:
            return self._db.execute(query, args).fetchall()
        except sqlite3.DatabaseError as error:
            if is_damage(error):
                raise StoreDamaged(damaged_message(self.path, error)) from None
            raise

    def _loads(self, text: Any) -> Any | None:
        """A stored row's JSON, or None (counted) where a damaged page left text that is not JSON."""
        try:
            return json.loads(text)
        except (ValueError, TypeError, RecursionError):
            self.unreadable += 1
            return None

    def rows(self) -> list[tuple[int, str]]:
        """The stored events not read yet, as (sequence number, JSON payload)."""
        version = self._db.execute("PRAGMA data_version").fetchone()[0]
        if version == self._version:
            return []
        self._version = version
        rows = self._read(
            "SELECT id, payload FROM events WHERE run_id = ? AND id > ? ORDER BY id", (self.run_id, self.last_id)
        )
        if rows:
            self.last_id = rows[-1]["id"]
        return [(row["id"], row["payload"]) for row in rows]

    def poll(self) -> list[Event]:
        found = []
        for _seq, payload in self.rows():
            data = self._loads(payload)
            try:
                event = event_from_dict(data) if isinstance(data, dict) else None
            except (KeyError, TypeError, ValueError):  # JSON, but not an event any more
                self.unreadable += 1
                continue
            if event is not None:
                found.append(event)
        return found

    def run(self) -> dict[str, Any] | None:
        rows = self._read("SELECT * FROM runs WHERE id = ?", (self.run_id,))
        return dict(rows[0]) if rows else None

    def samples(self, since: float) -> list[Sample]:
        """The telemetry the engine stored (once a second) from `since` on."""
        rows = self._read("SELECT data FROM samples WHERE run_id = ? AND t >= ? ORDER BY t", (self.run_id, since))
        loaded = (self._loads(row["data"]) for row in rows)
        return [sample_from_dict(data) for data in loaded if isinstance(data, dict)]

    def close(self) -> None:
        self._db.close()
