"""Connections to the store's file: the usual one, a read-only one, and one that reads a store whose disk is full."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from rigcheck.engine.store.errors import is_full

BUSY_TIMEOUT_S = 30.0


def _lenient_text(data: bytes) -> str:
    """Text that is not UTF-8 (a damaged page) reads as replacement characters rather than failing the read."""
    return data.decode("utf-8", "replace")


def _writable(path: Path) -> bool:
    """Whether this process may write the store and the journals SQLite keeps beside it."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


def _read_only_query(path: Path) -> str:
    """SQLite's URI options for a store this process may only read. In a folder it cannot write either (a
    read-only mount) SQLite cannot make the shared-memory file WAL readers need: with no write-ahead log
    there, nothing is pending and the file may be read as it stands."""
    if os.access(path.parent, os.W_OK) or path.with_name(path.name + "-wal").exists():
        return "mode=ro"
    return "mode=ro&immutable=1"


def _connect(path: Path, query: str | None = None) -> sqlite3.Connection:
    """A connection to the store; `query`: SQLite URI options (read-only ones)."""
    target = f"{path.absolute().as_uri()}?{query}" if query else path
    db = sqlite3.connect(target, timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None, uri=bool(query))
    db.row_factory = sqlite3.Row
    db.text_factory = _lenient_text
    return db


def lacks_room(error: sqlite3.Error) -> bool:
    """A read refused because SQLite could not make or grow its files beside the store (a full disk)."""
    name = getattr(error, "sqlite_errorname", "")
    return is_full(error) or name.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN")) or "disk I/O error" in str(error)


def open_reading(path: Path) -> sqlite3.Connection:
    """A connection that reads the store where its disk is full and SQLite cannot make the shared-memory file
    WAL readers use. With no write-ahead log pending, the file is read as it stands; with one, its index is
    kept in this process's memory (exclusive locking mode: nothing else can write meanwhile anyway)."""
    wal = path.with_name(path.name + "-wal")
    if not wal.exists() or wal.stat().st_size == 0:
        db = _connect(path, "mode=ro&immutable=1")
    else:
        db = _connect(path)
        db.execute("PRAGMA locking_mode=EXCLUSIVE")
        db.execute("PRAGMA query_only=1")
    db.execute("SELECT count(*) FROM sqlite_master").fetchone()  # raises here if it cannot be read this way either
    return db


def reading_connection(path: Path) -> sqlite3.Connection:
    """A reader's own connection (a follower's): the usual one, else the full-disk one."""
    db = _connect(path)
    try:
        db.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return db
    except sqlite3.OperationalError as error:
        db.close()
        if not lacks_room(error):
            raise
        return open_reading(path)
