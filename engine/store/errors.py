"""What goes wrong with a store, as exceptions that carry one line naming the store and what to do."""

from __future__ import annotations

import errno
import os
import sqlite3
from pathlib import Path

STORE_ENV = "RIGCHECK_STORE"


class StoreError(Exception):
    """The store cannot be used; the message says where it is and why."""


class StoreDamaged(StoreError, sqlite3.DatabaseError):
    """The file is damaged; a sqlite3 error too, so a run's writer ends the run as for any store failure."""


class StoreReadOnly(StoreError, sqlite3.OperationalError):
    """A write to a store this process may only read."""


class StoreLocked(StoreError):
    """Another process held the store for longer than a run may wait before it begins."""


def damaged_message(path: Path, error: BaseException | str) -> str:
    return (
        f"store {path} is damaged ({error}); it was left as it is: recover what it holds with "
        f"`sqlite3 {path} .recover | sqlite3 NEW.db`, then use --store NEW.db (or {STORE_ENV})"
    )


def is_damage(error: sqlite3.Error) -> bool:
    """SQLITE_CORRUPT: the file's pages are bad (a busy or full disk is not damage; a file that is not SQLite
    at all keeps the plainer message)."""
    name = getattr(error, "sqlite_errorname", "")  # Python 3.11+
    return name.startswith("SQLITE_CORRUPT") or "malformed" in str(error)


def is_locked(error: BaseException) -> bool:
    """SQLITE_BUSY or SQLITE_LOCKED: another process holds the store for now; the write may be tried again."""
    name = getattr(error, "sqlite_errorname", "")
    return name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "is locked" in str(error)


def is_full(error: BaseException) -> bool:
    """SQLITE_FULL, or ENOSPC/EDQUOT from a file of ours: the disk (or the user's quota) has no room left."""
    name = getattr(error, "sqlite_errorname", "")
    return (
        name.startswith("SQLITE_FULL")
        or "disk is full" in str(error)
        or getattr(error, "errno", None) in (errno.ENOSPC, errno.EDQUOT)
    )


FULL_BELOW_KIB = 1024  # a new store that could not be made with less free than this met a full disk


def free_kib(folder: Path) -> int:
    """KiB free to an unprivileged writer; -1 where unknown: no folder, or a filesystem that holds no blocks at
    all (/proc, /sys), whose "0 free" is no full disk."""
    try:
        info = os.statvfs(folder)
    except OSError:
        return -1
    if info.f_blocks == 0:
        return -1
    return info.f_bavail * info.f_frsize // 1024


def no_room_for_a_new_store(path: Path, error: BaseException) -> bool:
    """Whether making a new store failed for want of room: SQLite said so, or said something that follows
    from it (a rollback with no transaction, a read-only or half-made file) on a disk all but full."""
    return is_full(error) or 0 <= free_kib(path.parent) < FULL_BELOW_KIB


def is_refused_write(error: BaseException) -> bool:
    """SQLITE_READONLY on a file whose mode allows writing: an append-only or immutable file (chattr)."""
    name = getattr(error, "sqlite_errorname", "")
    return name.startswith("SQLITE_READONLY") or "readonly database" in str(error)
