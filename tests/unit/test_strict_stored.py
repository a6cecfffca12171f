"""`run --strict` is part of the run's request: the flag is kept with the run from its start, and the exit code the
engine stores is the one it returned (--strict applied by report/failures.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.run.owner import OwnedRun
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store
from rigcheck.engine.store.schema import MIGRATIONS, SCHEMA_VERSION
from stage_infos import fake


def warned_run(store: Store) -> int:
    run_id = store.begin_run(["ok"], "cpu", "quick", "python3", [])
    store.record(run_id, Verdict("ok", "stage", Status.WARN, "close"))
    store.end_run(run_id, "complete", 0)
    return run_id


def test_the_flag_and_the_exit_code_are_stored_and_read_back(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    owned = OwnedRun(store, RunRequest((fake("warns"),), "cpu", "quick", telemetry=False, strict=True), control=False)
    assert owned.run_to_end() == 1
    reopened = Store(tmp_path / "s.db").run(owned.run_id)
    assert reopened is not None and (reopened["strict"], reopened["exit_code"]) == (1, 1)


def test_a_run_without_strict_reads_as_before(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run = store.run(warned_run(store))
    assert run is not None and (run["strict"], run["exit_code"]) == (0, 0)


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
