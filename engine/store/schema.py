"""The store's file: opening it owner-only, its schema and migrations, and the locked calls writer and reader share."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rigcheck.engine.store.connect import (
    BUSY_TIMEOUT_S,
    _connect,
    _read_only_query,
    _writable,
    lacks_room,
    open_reading,
    reading_connection,  # noqa: F401  (kept importable from here, as before the split)
)
from rigcheck.engine.store.errors import (
    STORE_ENV,
    StoreDamaged,
    StoreError,
    StoreLocked,
    StoreReadOnly,
    damaged_message,
    free_kib,
    is_damage,
    is_locked,
    no_room_for_a_new_store,
)
from rigcheck.engine.store.journals import begin_as_a_page, make_journals
from rigcheck.engine.store.migrations import MIGRATIONS
from rigcheck.engine.store.paths import check_own_path, check_store_paths, make_private_folder

NOT_UTF8 = "malformed database schema: SQLite's error quoted bytes that are not UTF-8"

SCHEMA_VERSION = len(MIGRATIONS)


def default_store_path() -> Path:
    if os.environ.get(STORE_ENV):
        try:
            return Path(os.environ[STORE_ENV]).expanduser()
        except RuntimeError:  # `~nouser/...`: a user with no home here
            raise StoreError(f"{STORE_ENV} {os.environ[STORE_ENV]}: names the home of a user who has none") from None
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "rigcheck" / "rigcheck.db"


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)


def _create_private(path: Path) -> None:
    """Make a missing store file readable by its owner only; SQLite gives its -wal and -shm files the same mode."""
    if not path.exists():
        try:  # O_EXCL: never through a link that appeared since the path was checked
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600))
        except FileExistsError:
            check_own_path(path, "store")


class StoreBase:
    """One SQLite file shared by every rigcheck process; safe to call from several threads."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.RLock()  # re-entered: a transaction's statements take it again
        existed = os.path.lexists(self.path)
        try:
            self._open()
        except (StoreError, sqlite3.Error, OSError) as error:
            if existed or not no_room_for_a_new_store(self.path, error):
                raise
            self._forget_new()
            raise StoreError(
                f"store {self.path} cannot be made: the disk holding it is full "
                f"({free_kib(self.path.parent)} KiB free); nothing was left there: "
                f"free some space or point --store / {STORE_ENV} elsewhere"
            ) from None

    def _forget_new(self) -> None:
        """A store this process began making on a full disk: its file and journals go, so the disk is not
        left fuller and a later open does not find an empty file that is no store."""
        with contextlib.suppress(Exception):
            self._db.close()
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(OSError):
                os.unlink(self.path.with_name(self.path.name + suffix))

    def _open(self) -> None:
        try:
            check_store_paths(self.path, self.log_dir(0).parent)
            if not self.path.parent.is_dir():
                self.path.parent.mkdir(parents=True, exist_ok=True)
            held = make_journals(self.path)
            _create_private(self.path)
            if held:
                begin_as_a_page(self.path)
            self.read_only = not _writable(self.path)  # then opening it writes nothing at all
            self.full = False  # its disk had no room for the files SQLite keeps beside it: read as it stands
            self._db = _connect(self.path, _read_only_query(self.path) if self.read_only else None)
            try:
                self._migrate()
            except sqlite3.OperationalError as error:
                if self.read_only or not lacks_room(error):
                    raise
                self._db.close()
                self._db = open_reading(self.path)
                self.read_only = self.full = True
                self._migrate()
        except StoreError:
            raise
        except UnicodeDecodeError:  # SQLite's own message quoted bytes of a damaged schema that are not UTF-8
            raise StoreDamaged(damaged_message(self.path, NOT_UTF8)) from None
        except sqlite3.DatabaseError as error:
            if is_damage(error):
                raise StoreDamaged(damaged_message(self.path, error)) from None
            if is_locked(error):  # another process holds it (a new store being made, a long write): no damage
                raise StoreLocked(
                    f"store {self.path} is held by another process (waited {BUSY_TIMEOUT_S:.0f} s); "
                    "it was left as it is: try again once it lets go"
                ) from None
            raise StoreError(
                f"store {self.path} is unreadable or corrupt ({error}); it was left as it is: "
                f"move it aside or point --store / {STORE_ENV} elsewhere"
            ) from None
        except OSError as error:
            raise StoreError(f"store {self.path} cannot be opened: {error}") from None

    def _check_schema(self) -> int:
        """Read-only look at the file: refuse a foreign or newer one before anything is written to it."""
        # One statement, so another process's migration cannot commit between reading the two.
        version, tables = self._db.execute(
            "SELECT user_version, (SELECT count(*) FROM sqlite_master) FROM pragma_user_version"
        ).fetchone()
        if version == 0 and tables:
            raise StoreError(
                f"store {self.path} is not a rigcheck store (it holds tables but no rigcheck schema version); "
                f"it was left as it is: move it aside or point --store / {STORE_ENV} elsewhere"
            )
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"store {self.path} has schema version {version}, newer than this "
                f"rigcheck understands ({SCHEMA_VERSION}); upgrade rigcheck or use another"
            )
        return version

    def _migrate(self) -> None:
        version = self._check_schema()
        if version == SCHEMA_VERSION:
            self._db.execute("PRAGMA synchronous=NORMAL")
            return
        if self.read_only:
            raise StoreError(
                f"store {self.path} is read-only here and has schema version {version}, older than this "
                f"rigcheck's ({SCHEMA_VERSION}); open it once where it can be written, or use a copy"
            )
        self._enable_wal()
        self._db.execute("PRAGMA synchronous=NORMAL")
        while True:
            self._db.execute("BEGIN IMMEDIATE")  # one process migrates; the others wait, then see it
            try:
                version = self._check_schema()
                if version == SCHEMA_VERSION:
                    self._db.execute("COMMIT")
                    return
                for statement in MIGRATIONS[version].split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {version + 1}")
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def _enable_wal(self) -> None:
        """Switch to WAL, retrying: SQLite answers 'locked' at once here, without its busy wait."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def log_dir(self, run_id: int) -> Path:
        """Where run `run_id`'s stage logs go: `<store stem>.logs/run-N` beside the store, so two stores
        in one folder never write into each other's logs."""
        folder = self.path.with_name(f"{self.path.stem}.logs")
        if folder == self.path:  # a store itself named `x.logs`
            folder = self.path.with_name(f"{self.path.name}.logs")
        return folder / f"run-{run_id}"

    def make_log_dir(self, run_id: int) -> Path:
        """The run's log folder, made readable by its owner only (the logs quote paths, pids and errors)."""
        folder = self.log_dir(run_id)
        try:
            for part in (folder.parent, folder):
                make_private_folder(part)
        except OSError as error:
            raise StoreError(f"log folder {folder} cannot be made: {error.strerror or error}") from None
        return folder

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def need_write(self) -> None:
        """StoreReadOnly (one line) before a write to a store this process may only read."""
        if self.full:
            raise StoreReadOnly(f"store {self.path}: its disk is full; nothing was written: free some space first")
        if self.read_only:
            raise StoreReadOnly(f"store {self.path} is read-only here; nothing was written: use a store you can write")

    def _write(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        self.need_write()
        with self._lock, self._damage_said():
            return self._db.execute(sql, params).lastrowid or 0

    @contextlib.contextmanager
    def transaction(self) -> Iterator[None]:
        """The body's writes all land or none does, so a write refused by a lock or a full disk can be
        tried again whole, never half-written twice."""
        self.need_write()
        with self._lock, self._damage_said():
            if self._db.in_transaction:  # inside another transaction of ours: part of it
                yield
                return
            self._db.execute("BEGIN IMMEDIATE")  # the write lock now, or SQLITE_BUSY before anything is written
            try:
                yield
                self._db.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    self._db.execute("ROLLBACK")
                raise

    @contextlib.contextmanager
    def patience(self, seconds: float) -> Iterator[None]:
        """Wait at most `seconds` for another process's lock in the body (not BUSY_TIMEOUT_S): writers that
        can hold their writes in memory try often rather than stall the run."""
        with self._lock:
            self._db.execute(f"PRAGMA busy_timeout = {int(seconds * 1000)}")
            try:
                yield
            finally:
                self._db.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock, self._damage_said():
            try:
                return self._db.execute(sql, params).fetchall()
            except UnicodeEncodeError:  # a value given on the command line with bytes that are not UTF-8
                raise StoreError(
                    "a value looked up in the store is not valid text (it holds bytes that are not UTF-8); "
                    "nothing stored can match it"
                ) from None

    @contextlib.contextmanager
    def _damage_said(self) -> Iterator[None]:
        """A damaged file found mid-way is StoreDamaged: one line naming the store and how to recover it."""
        try:
            yield
        except UnicodeDecodeError:
            raise StoreDamaged(damaged_message(self.path, NOT_UTF8)) from None
        except sqlite3.DatabaseError as error:
            if isinstance(error, StoreError) or not is_damage(error):
                raise
            raise StoreDamaged(damaged_message(self.path, error)) from None
