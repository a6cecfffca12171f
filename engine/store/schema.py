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

from rigcheck.engine.store.errors import (
    STORE_ENV,
    StoreDamaged,
    StoreError,
    StoreLocked,
    StoreReadOnly,
    damaged_message,
    free_kib,
    is_damage,
    is_full,
    is_locked,
    no_room_for_a_new_store,
)
from rigcheck.engine.store.journals import begin_as_a_page, make_journals
from rigcheck.engine.store.paths import check_own_path, check_store_paths, make_private_folder

BUSY_TIMEOUT_S = 30.0
NOT_UTF8 = "malformed database schema: SQLite's error quoted bytes that are not UTF-8"

MIGRATIONS: list[str] = [
    # version 1
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY, started REAL NOT NULL, finished REAL, status TEXT NOT NULL,
        exit_code INTEGER, host TEXT, pid INTEGER, device TEXT, profile TEXT, python TEXT,
        stages TEXT, argv TEXT, fingerprint TEXT
    );
    CREATE TABLE stages (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL,
        status TEXT NOT NULL, started REAL, finished REAL, exit_code INTEGER, pid INTEGER,
        python TEXT, log_path TEXT, UNIQUE (run_id, name)
    );
    CREATE TABLE events (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, stage TEXT, kind TEXT NOT NULL,
        t REAL NOT NULL, payload TEXT NOT NULL
    );
    CREATE TABLE measurements (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, stage TEXT NOT NULL, name TEXT NOT NULL,
        value REAL, unit TEXT, spread REAL, repeats INTEGER, device TEXT, params TEXT,
        conditions TEXT, fingerprint TEXT, t REAL
    );
    CREATE TABLE verdicts (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, stage TEXT NOT NULL, check_name TEXT,
        status TEXT NOT NULL, explanation TEXT, numbers TEXT, tolerance REAL, device TEXT, t REAL
    );
    CREATE TABLE facts (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, stage TEXT NOT NULL, data TEXT NOT NULL
    );
    CREATE TABLE fingerprints (digest TEXT PRIMARY KEY, basis TEXT NOT NULL, first_seen REAL);
    CREATE INDEX events_run ON events(run_id);
    CREATE INDEX measurements_run ON measurements(run_id);
    CREATE INDEX verdicts_run ON verdicts(run_id);
    """,
    # version 2: telemetry kept at about 1 Hz during a run, for the contention report
    """
    CREATE TABLE samples (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL, t REAL NOT NULL, data TEXT NOT NULL
    );
    CREATE INDEX samples_run ON samples(run_id);
    """,
    # version 3: the GPUs a run holds (one run per GPU) and why a run ended in error
    """
    ALTER TABLE runs ADD COLUMN gpus TEXT;
    ALTER TABLE runs ADD COLUMN error TEXT;
    """,
    # version 4: fleet runs hold every host's results; '' is the run's own host. A stage is one row per host.
    """
    ALTER TABLE runs ADD COLUMN fleet TEXT;
    ALTER TABLE events ADD COLUMN host TEXT NOT NULL DEFAULT '';
    ALTER TABLE measurements ADD COLUMN host TEXT NOT NULL DEFAULT '';
    ALTER TABLE verdicts ADD COLUMN host TEXT NOT NULL DEFAULT '';
    ALTER TABLE facts ADD COLUMN host TEXT NOT NULL DEFAULT '';
    CREATE TABLE stages_by_host (
        id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), name TEXT NOT NULL,
        status TEXT NOT NULL, started REAL, finished REAL, exit_code INTEGER, pid INTEGER,
        python TEXT, log_path TEXT, host TEXT NOT NULL DEFAULT '', UNIQUE (run_id, host, name)
    );
    INSERT INTO stages_by_host (id, run_id, name, status, started, finished, exit_code, pid, python, log_path)
        SELECT id, run_id, name, status, started, finished, exit_code, pid, python, log_path FROM stages;
    DROP TABLE stages;
    ALTER TABLE stages_by_host RENAME TO stages;
    """,
    # version 5: a run made with --strict (a WARN fails it); its exit_code is then the one it returned
    """
    ALTER TABLE runs ADD COLUMN strict INTEGER NOT NULL DEFAULT 0;
    """,
    # version 6: where the run's control socket is, so any caller finds it whatever its environment
    """
    ALTER TABLE runs ADD COLUMN control TEXT;
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


def _lenient_text(data: bytes) -> str:
    """Text that is not UTF-8 (a damaged page) reads as replacement characters rather than failing the read."""
    return data.decode("utf-8", "replace")


def _writable(path: Path) -> bool:
    """Whether this process may write the store and the journals SQLite keeps beside it."""
    return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)


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
