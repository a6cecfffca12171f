"""`run --strict` keeps the flag and the exit code it returned with the run; a store that cannot take them costs one
line on stderr, and the exit code still stands."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

from rich.console import Console
from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.store import Store
from rigcheck.engine.store.schema import MIGRATIONS, SCHEMA_VERSION
from rigcheck.tui.cli_run import keep_strict


def warned_run(store: Store) -> int:
    run_id = store.begin_run(["ok"], "cpu", "quick", "python3", [])
    store.record(run_id, Verdict("ok", "stage", Status.WARN, "close"))
    store.end_run(run_id, "complete", 0)
    return run_id


def test_the_flag_and_the_exit_code_are_stored_and_read_back(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = warned_run(store)
    err = Console(file=io.StringIO())
    report = keep_strict(store, run_id, 1, err)
    assert report is not None and (report["run"]["strict"], report["run"]["exit_code"]) == (1, 1)
    reopened = Store(tmp_path / "s.db").run(run_id)
    assert reopened is not None and (reopened["strict"], reopened["exit_code"]) == (1, 1)
    assert err.file.getvalue() == ""


def test_a_run_without_strict_reads_as_before(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run = store.run(warned_run(store))
    assert run is not None and (run["strict"], run["exit_code"]) == (0, 0)


def test_a_store_that_cannot_take_it_is_one_line(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = warned_run(store)

    def full_disk(run_id: int, code: int) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    store.record_strict = full_disk  # type: ignore[method-assign]
    err = Console(file=io.StringIO(), width=300)
    assert keep_strict(store, run_id, 1, err) is None
    lines = err.file.getvalue().strip().splitlines()
    assert len(lines) == 1 and "--strict could not be stored with run 1" in lines[0] and "disk is full" in lines[0]


def test_a_store_of_the_version_before_migrates_and_its_runs_read_as_not_strict(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    for version, migration in enumerate(MIGRATIONS[:4]):
        db.executescript(migration)
        db.execute(f"PRAGMA user_version = {version + 1}")
    db.execute("INSERT INTO runs (id, started, status, exit_code) VALUES (1, 0, 'complete', 0)")
    db.commit()
    db.close()
    store = Store(path)
    report = store.report(1)
    assert report is not None and (report["run"]["strict"], report["run"]["exit_code"]) == (0, 0)
    assert store._read("PRAGMA user_version")[0][0] == SCHEMA_VERSION
