"""The files SQLite keeps beside a store, made and held by rigcheck in a folder other users may write.

SQLite opens `STORE-wal`, `STORE-shm` and `STORE-journal` by name. On a connection's first read it plays back
a hot `STORE-journal` if one is there, whoever made it: in a sticky /tmp another user who renamed a crafted
journal into that name in the moment before the read replaced the store's pages with hers. So in a folder
others may write, rigcheck makes all three itself, new (O_EXCL) and 0600, before SQLite opens anything, and
keeps them: the sticky bit then stops her replacing or removing them, and an empty journal of ours is never
hot. SQLite removes an empty journal beside a store of no pages, so a new store is begun as one page (an empty
WAL database) rather than as an empty file.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import tempfile
from functools import cache
from pathlib import Path

from rigcheck.engine.store.paths import check_own_path

JOURNALS = ("-journal", "-wal", "-shm")  # the journal first: it is the one SQLite plays back unasked


def shared_folder(folder: Path) -> bool:
    """Whether users other than the owner may add files to the folder (its group or everyone may write it)."""
    try:
        return bool(os.stat(folder).st_mode & (stat.S_IWGRP | stat.S_IWOTH))
    except OSError:
        return False


def make_journals(path: Path) -> bool:
    """In a folder other users may write, make the store's journals first, new and 0600; one already there is
    used only when it is a regular file of ours (else StoreError). True when they are held (a shared folder)."""
    if not shared_folder(path.parent):
        return False
    for suffix in JOURNALS:
        journal = path.with_name(path.name + suffix)
        try:
            os.close(os.open(journal, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        except FileExistsError:
            check_own_path(journal, "store journal")
        except OSError:
            return False  # a folder we cannot write: SQLite will not make them either
    return True


@cache
def empty_store_page() -> bytes:
    """The one page of an empty WAL database, made by SQLite itself in a private folder."""
    with tempfile.TemporaryDirectory(prefix="rigcheck-seed-") as folder:
        seed = Path(folder) / "seed.db"
        db = sqlite3.connect(seed)
        try:
            db.execute("PRAGMA journal_mode=WAL")
        finally:
            db.close()
        return seed.read_bytes()


def begin_as_a_page(path: Path) -> None:
    """Give an empty store file of ours its first page, so SQLite keeps the journal we hold beside it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_size == 0 and info.st_uid == os.geteuid():
            os.write(fd, empty_store_page())
    finally:
        os.close(fd)
