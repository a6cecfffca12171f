"""The results store: SQLite in WAL mode, each event written as it arrives, so a cut-off run keeps it all.

Split by job: schema (the file, schema, migrations), write (runs and events going in), run_end (how a
run ends, and the one writer of that), read (lists and reports coming out), paths (what may be
opened or made), errors (what goes wrong, in one line), held (a run's writes that wait out another
process's lock), reserve (room kept for a run's end on a disk that fills up). `Store` is all of them
over one connection.
"""

from __future__ import annotations

from pathlib import Path

from rigcheck.engine.store.read import DURATION_RUNS, StoreReader
from rigcheck.engine.store.schema import BUSY_TIMEOUT_S, SCHEMA_VERSION, STORE_ENV, StoreError, default_store_path
from rigcheck.engine.store.write import StoreWriter

__all__ = [
    "BUSY_TIMEOUT_S",
    "DURATION_RUNS",
    "SCHEMA_VERSION",
    "STORE_ENV",
    "Store",
    "StoreError",
    "default_store_path",
]


class Store(StoreWriter, StoreReader):
    """The store as a rigcheck process opens it: opening it marks runs whose engine died as interrupted, where
    it can write (never on a full disk, a locked or a read-only store)."""

    def __init__(self, path: Path | str) -> None:
        super().__init__(path)
        self.sweep_dead_runs()
