"""The results store: SQLite in WAL mode, each event written as it arrives, so a cut-off run keeps it all."""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import statistics
import threading
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import psutil

from .contention import contention_report
from .events import (
    Event,
    Facts,
    Fingerprint,
    Measurement,
    RunFinished,
    StageFinished,
    StageStarted,
    Status,
    Verdict,
    event_kind,
    event_to_dict,
    worst,
)

STORE_ENV = "RIGCHECK_STORE"
BUSY_TIMEOUT_S = 30.0
DURATION_RUNS = 5  # a stage's expected time is the median of its last this-many runs

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
]
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(Exception):
    """The store cannot be used; the message says where it is and why."""


def default_store_path() -> Path:
    if os.environ.get(STORE_ENV):
        return Path(os.environ[STORE_ENV]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(base) / "rigcheck" / "rigcheck.db"


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str, sort_keys=True)


def _process_alive(pid: int | None, since: float) -> bool:
    """True when `pid` is still the process that started at or before `since` (guards PID reuse)."""
    if not pid:
        return False
    try:
        return psutil.Process(pid).create_time() <= since + 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False


class Store:
    """One SQLite file shared by every rigcheck process; safe to call from several threads."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        if self.path.is_dir():
            raise StoreError(f"store {self.path} is a folder, not a rigcheck store")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, check_same_thread=False, isolation_level=None)
            self._db.row_factory = sqlite3.Row
            self._migrate()
        except sqlite3.DatabaseError as error:
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
            raise sqlite3.DatabaseError("it holds tables but no rigcheck schema version")
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"store {self.path} has schema version {version}, newer than this "
                f"rigcheck understands ({SCHEMA_VERSION}); upgrade rigcheck or use another"
            )
        return version

    def _migrate(self) -> None:
        if self._check_schema() == SCHEMA_VERSION:
            self._db.execute("PRAGMA synchronous=NORMAL")
            return
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

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _write(self, sql: str, params: tuple[Any, ...] = ()) -> int:
        with self._lock:
            return self._db.execute(sql, params).lastrowid or 0

    def _read(self, sql: str, params: tuple[Any, ...] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    # -- writing a run --
    def begin_run(self, stages: list[str], device: str, profile: str, python: str, argv: list[str]) -> int:
        return self._write(
            "INSERT INTO runs (started, status, host, pid, device, profile, python, stages, argv)"
            " VALUES (?, 'running', ?, ?, ?, ?, ?, ?, ?)",
            (
                time.time(),
                socket.gethostname(),
                os.getpid(),
                device,
                profile,
                python,
                _dumps(stages),
                _dumps(argv),
            ),
        )

    def end_run(self, run_id: int, status: str, exit_code: int | None) -> None:
        self._write(
            "UPDATE runs SET finished = ?, status = ?, exit_code = ? WHERE id = ?",
            (time.time(), status, exit_code, run_id),
        )
        if status != "complete":
            self._write(
                "UPDATE stages SET status = 'INTERRUPTED' WHERE run_id = ? AND status = 'running'",
                (run_id,),
            )

    def record(self, run_id: int, event: Event) -> None:
        """Write one event as it arrives, plus its row in the table made for its kind."""
        stage = getattr(event, "stage", None)
        self._write(
            "INSERT INTO events (run_id, stage, kind, t, payload) VALUES (?, ?, ?, ?, ?)",
            (run_id, stage, event_kind(event), event.t, _dumps(event_to_dict(event))),
        )
        if isinstance(event, StageStarted):
            self._write(
                "INSERT INTO stages (run_id, name, status, started, pid, python)"
                " VALUES (?, ?, 'running', ?, ?, ?) ON CONFLICT (run_id, name) DO UPDATE SET"
                " status = 'running', started = excluded.started, pid = excluded.pid",
                (run_id, event.stage, event.t, event.pid, event.python),
            )
        elif isinstance(event, StageFinished):
            self._write(
                "INSERT INTO stages (run_id, name, status, finished, exit_code, log_path)"
                " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, name) DO UPDATE SET"
                " status = excluded.status, finished = excluded.finished,"
                " exit_code = excluded.exit_code, log_path = excluded.log_path",
                (run_id, event.stage, event.status.value, event.t, event.exit_code, event.log_path),
            )
        elif isinstance(event, Verdict):
            self._write(
                "INSERT INTO verdicts (run_id, stage, check_name, status, explanation, numbers,"
                " tolerance, device, t) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    run_id,
                    event.stage,
                    event.check,
                    event.status.value,
                    event.explanation,
                    _dumps(event.numbers),
                    event.tolerance,
                    event.device,
                    event.t,
                ),
            )
        elif isinstance(event, Measurement):
            self._write(
                "INSERT INTO measurements (run_id, stage, name, value, unit, spread, repeats, device,"
                " params, conditions, fingerprint, t) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
                " (SELECT fingerprint FROM runs WHERE id = ?), ?)",
                (
                    run_id,
                    event.stage,
                    event.name,
                    event.value,
                    event.unit,
                    event.spread,
                    event.repeats,
                    event.device,
                    _dumps(event.params),
                    _dumps(event.conditions),
                    run_id,
                    event.t,
                ),
            )
        elif isinstance(event, Facts):
            self._write(
                "INSERT INTO facts (run_id, stage, data) VALUES (?, ?, ?)",
                (run_id, event.stage, _dumps(event.data)),
            )
        elif isinstance(event, Fingerprint):
            self._write(
                "INSERT OR IGNORE INTO fingerprints (digest, basis, first_seen) VALUES (?, ?, ?)",
                (event.digest, _dumps(event.basis), event.t),
            )
            # the run's first fingerprint stands; a later stage that differs is a finding (see runner)
            self._write("UPDATE runs SET fingerprint = ? WHERE id = ? AND fingerprint IS NULL", (event.digest, run_id))
        elif isinstance(event, RunFinished):
            self.end_run(run_id, event.status, event.exit_code)

    def record_sample(self, run_id: int, t: float, data: dict[str, Any]) -> None:
        self._write("INSERT INTO samples (run_id, t, data) VALUES (?, ?, ?)", (run_id, t, _dumps(data)))

    def samples(self, run_id: int) -> list[dict[str, Any]]:
        rows = self._read("SELECT data FROM samples WHERE run_id = ? ORDER BY t", (run_id,))
        return [json.loads(row["data"]) for row in rows]

    def earlier_clean_clocks(self, run_id: int, name: str, gpu_uuid: str, limit: int = 20) -> list[float]:
        """The mean SM clock of this figure on this GPU (by UUID) in earlier runs where it was TRUSTED."""
        rows = self._read(
            "SELECT params, conditions FROM measurements WHERE name = ? AND run_id < ? ORDER BY id DESC LIMIT ?",
            (name, run_id, 5 * limit),
        )
        clocks = []
        for row in rows:
            params, conditions = json.loads(row["params"] or "{}"), json.loads(row["conditions"] or "{}")
            clock = conditions.get("sm_clock_mean_mhz")
            if params.get("gpu_uuid") == gpu_uuid and conditions.get("trust") == "TRUSTED" and clock:
                clocks.append(float(clock))
        return clocks[:limit]

    def verified(self, run_id: int, device: str) -> bool:
        """Has Verify passed for this device in this run, or in an earlier one with the same fingerprint?"""
        rows = self._read(
            "SELECT 1 FROM stages s JOIN runs r ON s.run_id = r.id WHERE s.name = 'verify'"
            " AND s.status IN ('PASS', 'WARN') AND r.fingerprint IS NOT NULL"
            " AND r.fingerprint = (SELECT fingerprint FROM runs WHERE id = ?)"
            " AND (r.device IN (?, 'all') OR ',' || r.device || ',' LIKE '%,' || ? || ',%') LIMIT 1",
            (run_id, device, device),
        )
        return bool(rows)

    # -- reading --
    def mark_interrupted(self) -> None:
        """Runs left 'running' by a process that no longer exists on this host were cut off."""
        host = socket.gethostname()
        for row in self._read("SELECT id, pid, started, host FROM runs WHERE status = 'running'"):
            if row["host"] == host and not _process_alive(row["pid"], row["started"]):
                self.end_run(row["id"], "interrupted", None)

    def runs(self, limit: int = 50) -> list[dict[str, Any]]:
        self.mark_interrupted()
        rows = self._read("SELECT * FROM runs ORDER BY id DESC LIMIT ?", (limit,))
        return [dict(row) for row in rows]

    def run(self, run_id: int) -> dict[str, Any] | None:
        self.mark_interrupted()
        rows = self._read("SELECT * FROM runs WHERE id = ?", (run_id,))
        return dict(rows[0]) if rows else None

    def latest_probe(self) -> tuple[dict[str, Any], str | None, list[str]] | None:
        """The newest Probe facts, that run's fingerprint, and Probe's non-PASS explanations."""
        rows = self._read(
            "SELECT f.run_id, f.data, r.fingerprint FROM facts f JOIN runs r ON r.id = f.run_id"
            " WHERE f.stage = 'probe' ORDER BY f.id DESC LIMIT 1"
        )
        if not rows:
            return None
        warnings = self._read(
            "SELECT explanation FROM verdicts WHERE run_id = ? AND stage = 'probe' AND status != 'PASS' ORDER BY id",
            (rows[0]["run_id"],),
        )
        return json.loads(rows[0]["data"]), rows[0]["fingerprint"], [w["explanation"] for w in warnings]

    def latest_run_id(self) -> int | None:
        rows = self._read("SELECT max(id) FROM runs")
        return rows[0][0] if rows else None

    def _table(self, table: str, run_id: int) -> list[dict[str, Any]]:
        rows = self._read(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY id", (run_id,))
        return [dict(row) for row in rows]

    def report(self, run_id: int) -> dict[str, Any] | None:
        """Everything the store holds for one run, as plain data (the source of every export)."""
        run = self.run(run_id)
        if run is None:
            return None
        for key in ("stages", "argv"):
            run[key] = json.loads(run[key] or "[]")
        basis = None
        if run["fingerprint"]:
            rows = self._read("SELECT basis FROM fingerprints WHERE digest = ?", (run["fingerprint"],))
            basis = json.loads(rows[0]["basis"]) if rows else None
        decoded = {"numbers", "params", "conditions", "data"}

        def rows_of(table: str) -> list[dict[str, Any]]:
            out = self._table(table, run_id)
            for row in out:
                for key in decoded & row.keys():
                    row[key] = json.loads(row[key] or "null")
            return out

        measurements = rows_of("measurements")
        samples = self.samples(run_id)
        return {
            "run": run,
            "fingerprint": {"digest": run["fingerprint"], "basis": basis},
            "stages": rows_of("stages"),
            "verdicts": rows_of("verdicts"),
            "measurements": measurements,
            "facts": {row["stage"]: row["data"] for row in rows_of("facts")},
            "telemetry_samples": len(samples),
            "contention": contention_report(samples, measurements),
        }

    def worst_statuses(self, run_ids: list[int]) -> dict[int, str]:
        """Each run's most severe verdict (CRASH over TIMEOUT over FAIL over WARN over PASS over SKIP).

        A run without any verdict is absent from the answer.
        """
        if not run_ids:
            return {}
        marks = ", ".join("?" * len(run_ids))
        rows = self._read(
            f"SELECT DISTINCT run_id, status FROM verdicts WHERE run_id IN ({marks})",
            tuple(run_ids),
        )
        found: dict[int, list[Status]] = {}
        for row in rows:
            with suppress(ValueError):  # a status this version does not know is not a verdict to rank
                found.setdefault(row["run_id"], []).append(Status(row["status"]))
        return {run_id: status.value for run_id, statuses in found.items() if (status := worst(statuses))}

    def stage_durations(self, device: str, profile: str, last: int = DURATION_RUNS) -> dict[str, float]:
        """Each stage's median wall time over its last few finished runs on this device and profile.

        Only stages that ran to their end count (PASS, WARN or FAIL): a crash, a timeout or a cancel
        says nothing about how long the stage takes.
        """
        rows = self._read(
            "SELECT s.name, s.finished - s.started AS seconds FROM stages s JOIN runs r ON r.id = s.run_id"
            " WHERE r.device = ? AND r.profile = ? AND s.status IN ('PASS', 'WARN', 'FAIL')"
            " AND s.started IS NOT NULL AND s.finished > s.started ORDER BY s.id DESC LIMIT 1000",
            (device, profile),
        )
        recent: dict[str, list[float]] = {}
        for row in rows:
            times = recent.setdefault(row["name"], [])
            if len(times) < last:
                times.append(row["seconds"])
        return {name: statistics.median(times) for name, times in recent.items()}
