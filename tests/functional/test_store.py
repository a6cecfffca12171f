"""The store: schema versions, refusal of foreign or newer files, and two writers at once."""

from __future__ import annotations

import multiprocessing
import sqlite3
import time
from pathlib import Path

import pytest
from rigcheck.engine.events import Measurement, StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.store import SCHEMA_VERSION, Store, StoreError

WRITES = 150


def _writer(path: str, tag: str) -> None:
    store = Store(path)
    run_id = store.begin_run([tag], "cpu", "quick", "python", [])
    store.record(run_id, StageStarted(tag, "cpu", 1, "python"))
    for i in range(WRITES):
        store.record(run_id, Measurement(tag, "m", float(i), "x"))
    store.record(run_id, Verdict(tag, "c", Status.PASS, "fine"))
    store.record(run_id, StageFinished(tag, Status.PASS, 0))
    store.end_run(run_id, "complete", 0)


def test_two_processes_writing_at_once_corrupt_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(path, f"w{i}")) for i in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert db.execute("SELECT count(*) FROM measurements").fetchone()[0] == 2 * WRITES
        assert db.execute("SELECT count(*) FROM runs WHERE status = 'complete'").fetchone()[0] == 2


def _open_at(path: str, moment: float) -> None:
    time.sleep(max(0.0, moment - time.time()))
    Store(path).close()


def test_many_processes_creating_one_store_at_the_same_moment_all_succeed(tmp_path: Path) -> None:
    """The first-open race: WAL switch and schema check must not fail when others migrate at once."""
    context = multiprocessing.get_context("fork")
    for trial in range(12):
        path = str(tmp_path / f"fresh{trial}.db")
        moment = time.time() + 0.15
        openers = [context.Process(target=_open_at, args=(path, moment)) for _ in range(6)]
        for opener in openers:
            opener.start()
        for opener in openers:
            opener.join(60)
        assert [opener.exitcode for opener in openers] == [0] * 6, f"trial {trial}"
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_new_store_has_the_current_schema_version(tmp_path: Path) -> None:
    Store(tmp_path / "s.db").close()
    with sqlite3.connect(tmp_path / "s.db") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    Store(tmp_path / "s.db").close()
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer"):
        Store(tmp_path / "s.db")


def test_someone_elses_sqlite_file_is_refused_untouched(tmp_path: Path) -> None:
    with sqlite3.connect(tmp_path / "other.db") as db:
        db.execute("CREATE TABLE notes (x)")
    before = (tmp_path / "other.db").read_bytes()
    with pytest.raises(StoreError, match="no rigcheck schema"):
        Store(tmp_path / "other.db")
    assert (tmp_path / "other.db").read_bytes() == before


def test_a_folder_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="folder"):
        Store(tmp_path)


def test_a_dead_writer_leaves_its_run_interrupted(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["probe"], "cpu", "quick", "python", [])
    store.record(run_id, StageStarted("probe", "cpu", 1, "python"))
    with sqlite3.connect(tmp_path / "s.db") as db:
        db.execute("UPDATE runs SET pid = 999999999 WHERE id = ?", (run_id,))
    assert store.report(run_id)["run"]["status"] == "running"  # reading never writes
    assert not store.is_live(store.run(run_id))
    store = Store(tmp_path / "s.db")  # the next rigcheck start marks it
    report = store.report(run_id)
    assert report["run"]["status"] == "interrupted"
    assert report["stages"][0]["status"] == "INTERRUPTED"
    live = store.begin_run(["probe"], "cpu", "quick", "python", [])
    assert store.run(live)["status"] == "running"  # this process is alive
    assert Store(tmp_path / "s.db").run(live)["status"] == "running"


def test_the_store_and_log_folders_are_the_owners_only(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["probe"], "cpu", "quick", "python", [])
    folder = store.make_log_dir(run_id)
    assert (tmp_path / "s.db").stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "s.db-wal").stat().st_mode & 0o077 == 0
    assert folder.stat().st_mode & 0o777 == 0o700
    assert folder.parent.stat().st_mode & 0o777 == 0o700


def test_latest_probe_facts_come_from_the_newest_probe_run(tmp_path: Path) -> None:
    from rigcheck.engine.events import Facts, Fingerprint

    store = Store(tmp_path / "s.db")
    assert store.latest_probe() is None
    for digest, model in (("aaaa", "old"), ("bbbb", "new")):
        run_id = store.begin_run(["probe"], "cpu", "quick", "python", [])
        store.record(run_id, Fingerprint("probe", digest, {}))
        store.record(run_id, Facts("probe", {"cpu": {"model": model}}))
        store.record(run_id, Verdict("probe", "environment", Status.WARN, f"{model} warning"))
    store.begin_run(["matmul"], "cpu", "quick", "python", [])  # a later run without Probe
    assert store.latest_probe() == ({"cpu": {"model": "new"}}, "bbbb", ["new warning"])


def _run_with(store: Store, verdicts: list[Status]) -> int:
    run_id = store.begin_run(["s"], "cpu", "quick", "python", [])
    for index, status in enumerate(verdicts):
        store.record(run_id, Verdict("s", f"check{index}", status, "why"))
    store.end_run(run_id, "complete", 0)
    return run_id


def test_each_runs_worst_verdict_is_read_from_its_verdicts(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    passed = _run_with(store, [Status.PASS, Status.SKIP, Status.PASS])
    failed = _run_with(store, [Status.PASS, Status.FAIL, Status.WARN])
    crashed = _run_with(store, [Status.FAIL, Status.CRASH, Status.TIMEOUT])
    skipped = _run_with(store, [Status.SKIP])
    empty = _run_with(store, [])
    worst = store.worst_statuses([passed, failed, crashed, skipped, empty])
    assert worst == {passed: "PASS", failed: "FAIL", crashed: "CRASH", skipped: "SKIP"}
    assert store.worst_statuses([]) == {}


def _timed_stage(store: Store, device: str, profile: str, stage: str, seconds: float, status: Status) -> None:
    run_id = store.begin_run([stage], device, profile, "python", [])
    store.record(run_id, StageStarted(stage, device, 1, "python", t=1000.0))
    store.record(run_id, StageFinished(stage, status, 0, t=1000.0 + seconds))
    store.end_run(run_id, "complete", 0)


def test_stage_durations_come_from_earlier_finished_runs_on_the_same_device_and_profile(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    assert store.stage_durations("cpu", "quick") == {}  # no earlier run
    for seconds in (100.0, 10.0, 12.0, 11.0, 50.0, 13.0):  # the oldest (100) falls out of the last five
        _timed_stage(store, "cpu", "quick", "verify", seconds, Status.PASS)
    _timed_stage(store, "cpu", "quick", "probe", 4.0, Status.FAIL)  # a failed stage still ran to its end
    _timed_stage(store, "cpu", "quick", "matmul", 600.0, Status.TIMEOUT)  # killed at its limit: no estimate
    _timed_stage(store, "cpu", "quick", "training", 3.0, Status.SKIP)  # cancelled: no estimate
    _timed_stage(store, "cuda:0", "quick", "verify", 2.0, Status.PASS)  # another device
    _timed_stage(store, "cpu", "full", "verify", 900.0, Status.PASS)  # another profile
    assert store.stage_durations("cpu", "quick") == {"verify": 12.0, "probe": 4.0}
    assert store.stage_durations("cuda:0", "quick") == {"verify": 2.0}
    assert store.stage_durations("cuda:1", "quick") == {}


def _skipped_stage(store: Store, stage: str, seconds: float, check: str, run_status: str = "complete") -> None:
    run_id = store.begin_run([stage], "cpu", "quick", "python", [])
    store.record(run_id, StageStarted(stage, "cpu", 1, "python", t=1000.0))
    store.record(run_id, Verdict(stage, check, Status.SKIP, "why", device="cpu"))
    store.record(run_id, StageFinished(stage, Status.SKIP, 0, t=1000.0 + seconds))
    store.end_run(run_id, run_status, 0)


def test_a_stage_that_skipped_itself_gives_its_time_and_a_cancelled_one_does_not(tmp_path: Path) -> None:
    """A CPU host: health and links skip on their own every time, and take that long again (issue 43: the run never
    had an estimate, 'no earlier finished run of health, links')."""
    store = Store(tmp_path / "s.db")
    _skipped_stage(store, "links", 0.5, "links")  # no GPUs: the stage's own SKIP
    _skipped_stage(store, "health", 0.0, "gpu")  # as fast as the clock can tell
    _skipped_stage(store, "training", 3.0, "stage")  # cancelled by the user: the runner's "stage" SKIP
    _skipped_stage(store, "matmul", 5.0, "matmul", run_status="cancelled")  # in a cancelled run
    assert store.stage_durations("cpu", "quick") == {"links": 0.5, "health": 0.0}
