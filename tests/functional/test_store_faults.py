"""A store another process holds, a store whose disk is full (injected, so CI always covers it), and
half-written shared files: the run goes on or stops as it should, and nothing measured is lost."""

from __future__ import annotations

import contextlib
import errno
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_calls import rigcheck
from rigcheck.engine.events import Event, LogLine, Measurement, Progress, StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.run.owner import OwnedRun
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan
from rigcheck.engine.store import Store
from rigcheck.engine.store import held as held_module
from rigcheck.engine.store.errors import StoreLocked, StoreReadOnly
from rigcheck.engine.store.held import HeldWrites
from rigcheck.engine.store.reserve import RESERVE_NAME
from rigcheck.engine.store.run_end import RunEnds
from rigcheck.engine.store.schema import StoreBase, open_reading
from rigcheck.engine.telemetry.sample import HostSample
from rigcheck.engine.telemetry.sampler import Sampler
from store_fault_cli import info
from stored_runs import dead_engine_run

LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=60)
db.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.read()
db.execute("COMMIT")
"""


@contextlib.contextmanager
def store_locked(path: Path) -> Iterator[None]:
    """Another process holds the store (BEGIN EXCLUSIVE) until the block ends."""
    holder = subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.stdin.close()
        assert holder.wait(60) == 0


def wait_for(predicate, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def stored_kinds(path: Path, run_id: int) -> list[str]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        return [kind for (kind,) in db.execute("SELECT kind FROM events WHERE run_id = ? ORDER BY id", (run_id,))]


def some_events() -> list[Event]:
    return [
        StageStarted("a", "cpu", 1, "python"),
        Progress("a", 1, 2, "half"),
        Measurement("a", "rate", 1.0, "ops/s"),
        Verdict("a", "rate", Status.PASS, "fine"),
        StageFinished("a", Status.PASS),
    ]


# -- held writes --


def test_a_locked_store_holds_the_events_in_order_and_writes_them_when_released(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = Store(path)
    run_id = store.begin_run(["a"], "cpu", "quick", "python", [])
    writes = HeldWrites(store, run_id)
    with store_locked(path):
        for event in some_events():
            writes.event(event)
        writes.sample(time.time(), {"host": {}})
        assert writes.held == 6 and stored_kinds(path, run_id) == []  # all in memory, none lost
    assert writes.drained(120)
    assert stored_kinds(path, run_id) == ["StageStarted", "Progress", "Measurement", "Verdict", "StageFinished"]
    assert len(store.samples(run_id)) == 1 and store.run(run_id)["status"] == "running"
    assert writes.locked_s > 0 and not writes.dropped and not writes.lost


def test_a_free_store_is_written_at_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["a"], "cpu", "quick", "python", [])
    writes = HeldWrites(store, run_id)
    for event in some_events():
        writes.event(event)
        assert writes.held == 0
    assert len(stored_kinds(tmp_path / "s.db", run_id)) == 5 and writes.locked_s == 0


def test_beyond_the_bound_chatter_and_telemetry_are_dropped_and_counted_never_figures(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = Store(path)
    run_id = store.begin_run(["a"], "cpu", "quick", "python", [])
    writes = HeldWrites(store, run_id, bounds={"samples": 3, "events": 2})
    with store_locked(path):
        for n in range(10):
            writes.sample(float(n), {"n": n})
            writes.event(Progress("a", n, 10))
            writes.event(LogLine("a", f"line {n}"))
            writes.event(Measurement("a", f"figure {n}", float(n), "units"))
        writes.event(LogLine("a", "a crash's last lines", level="error"))  # never dropped
    assert writes.drained(120)
    assert writes.dropped == {"samples": 7, "events": 18}
    kinds = stored_kinds(path, run_id)
    assert kinds.count("Measurement") == 10 and kinds.count("Progress") + kinds.count("LogLine") == 3
    assert [s["n"] for s in store.samples(run_id)] == [0, 1, 2]


# -- a whole run while another process holds the store --


def steady(telemetry: bool = True, **options: object) -> RunRequest:
    return RunRequest((info("steady"),), "cpu", "quick", options=options, telemetry=telemetry)


def test_a_run_goes_on_through_a_lock_and_stores_everything_once_it_is_released(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = Store(path)
    seen: list[Event] = []
    owned = OwnedRun(store, steady(steps=8)).listen(seen.append)
    with store_locked(path):
        t_locked = time.time()
        owned.start()
        wait_for(lambda: any(isinstance(e, Verdict) and e.check == "steady" for e in seen))  # the stage ran on
        assert not owned.wait(0.1)  # the run holds what it could not write yet
        assert store.run(owned.run_id)["status"] == "running"
        t_released = time.time()
    assert owned.wait(120)
    assert owned.finish() == 0
    run = store.run(owned.run_id)
    assert run["status"] == "complete" and run["error"] is None
    report = store.report(owned.run_id)
    assert [m["name"] for m in report["measurements"]] == [f"step {n}" for n in range(8)]
    assert not [v for v in report["verdicts"] if v["check_name"] == "store-lock"]  # nothing was dropped
    held_samples = [s for s in store.samples(owned.run_id) if t_locked <= s["t"] <= t_released]
    assert held_samples  # telemetry taken while locked was kept too
    assert not (owned.log_dir / RESERVE_NAME).exists()


def test_what_a_long_lock_drops_is_a_warn_in_the_run_shown_by_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(held_module, "HELD_CHATTER", 5)
    path = tmp_path / "s.db"
    store = Store(path)
    seen: list[Event] = []
    owned = OwnedRun(store, steady(steps=6, chatter=5)).listen(seen.append)
    with store_locked(path):
        owned.start()
        wait_for(lambda: any(isinstance(e, Verdict) and e.check == "store-lock" for e in seen))
    assert owned.wait(120) and owned.finish() == 0
    report = store.report(owned.run_id)
    assert len(report["measurements"]) == 6  # every figure kept
    (warn,) = [v for v in report["verdicts"] if v["check_name"] == "store-lock"]
    assert warn["status"] == "WARN" and warn["numbers"]["dropped_events"] >= 25 - 5
    assert {"dropped_samples", "locked_s", "sampler_missed_ticks"} <= warn["numbers"].keys()
    shown = rigcheck("show", str(owned.run_id), store=path)
    assert shown.returncode == 0 and "store-lock" in shown.stdout and "dropped" in shown.stdout


def test_a_run_that_cannot_begin_for_a_lock_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = Store(path)
    with store_locked(path), store.patience(0.3), pytest.raises(StoreLocked, match="held by another process"):
        store.claim_run(["a"], "cpu", "quick", "python", [], ("cpu",))
    assert store.claim_run(["a"], "cpu", "quick", "python", [], ("cpu",))[0] == 1  # once released


# -- a full disk, injected --


class FullOnce(Store):
    """A store whose disk is full when the first figure arrives; the reserve given back makes room again."""

    refused = 0

    def record(self, run_id, event, host=""):  # type: ignore[no-untyped-def]
        if isinstance(event, Measurement) and not self.refused:
            self.refused += 1
            raise sqlite3.OperationalError("database or disk is full")
        super().record(run_id, event, host)


def test_a_full_disk_stops_the_run_as_an_error_and_the_reserve_keeps_the_figure(tmp_path: Path) -> None:
    store = FullOnce(tmp_path / "s.db")
    owned = OwnedRun(store, steady(telemetry=False, steps=5))
    assert (owned.log_dir / RESERVE_NAME).stat().st_size > 0
    owned.start()
    assert owned.wait(120) and owned.finish() == 4
    run = store.run(owned.run_id)
    assert run["status"] == "error" and "database or disk is full" in run["error"]
    report = store.report(owned.run_id)
    assert [m["name"] for m in report["measurements"]][:1] == ["step 0"]  # the figure that met the full disk
    assert any(v["explanation"] == "stopped: the store's disk is full" for v in report["verdicts"])
    assert not (owned.log_dir / RESERVE_NAME).exists()


def test_a_clean_run_keeps_its_reserve_until_its_end(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    owned = OwnedRun(store, steady(telemetry=False, steps=2)).start()
    assert owned.session.writes.reserve is not None and owned.session.writes.reserve.held
    assert owned.wait(120) and owned.finish() == 0
    assert store.run(owned.run_id)["status"] == "complete" and not (owned.log_dir / RESERVE_NAME).exists()


def dead_run(path: Path) -> int:
    return dead_engine_run(Store(path))


def full_disk(*args: object, **kwargs: object) -> None:
    raise sqlite3.OperationalError("database or disk is full")


def test_opening_a_store_on_a_full_disk_leaves_the_sweep_for_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    run_id = dead_run(path)
    with monkeypatch.context() as patched:
        patched.setattr(RunEnds, "write_end", full_disk)
        store = Store(path)  # no exception: opening never fails on a write it cannot make
        assert store.run(run_id)["status"] == "running" and len(store.runs()) == 1
        store.close()
    assert Store(path).run(run_id)["status"] == "interrupted"  # with room, the sweep does its work


def test_opening_a_locked_store_leaves_the_sweep_for_later(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    run_id = dead_run(path)
    with store_locked(path):
        store = Store(path)
        assert store.run(run_id)["status"] == "running"
    assert Store(path).run(run_id)["status"] == "interrupted"


def test_a_store_whose_disk_has_no_room_for_sqlites_files_is_read_as_it_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    first = Store(path)
    first.begin_run(["a"], "cpu", "quick", "python", [])
    first.close()
    real = StoreBase._check_schema
    calls: list[int] = []

    def no_room_the_first_time(self: StoreBase) -> int:
        calls.append(1)
        if len(calls) == 1:  # what SQLite answers when it cannot make the shared-memory file
            raise sqlite3.OperationalError("disk I/O error")
        return real(self)

    monkeypatch.setattr(StoreBase, "_check_schema", no_room_the_first_time)
    store = Store(path)
    assert store.full and store.read_only and [r["id"] for r in store.runs()] == [1]
    with pytest.raises(StoreReadOnly, match="its disk is full; nothing was written"):
        store.begin_run(["a"], "cpu", "quick", "python", [])


def test_a_write_ahead_log_left_behind_is_read_without_the_shared_memory_file(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    writer = sqlite3.connect(path, isolation_level=None)
    writer.execute("PRAGMA journal_mode=WAL")
    writer.execute("PRAGMA wal_autocheckpoint=0")
    writer.execute("CREATE TABLE t (a)")
    writer.execute("INSERT INTO t VALUES (7)")
    copy = tmp_path / "copy.db"
    for suffix in ("", "-wal"):  # as a killed engine leaves them: the last rows only in the log
        shutil.copy(f"{path}{suffix}", f"{copy}{suffix}")
    writer.close()
    assert open_reading(copy).execute("SELECT a FROM t").fetchall()[0][0] == 7


# -- half-written shared files --


def test_a_shared_result_that_cannot_be_written_leaves_no_partial_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    torch = pytest.importorskip("torch")
    from rigcheck.engine.stages.common import shared_cache

    monkeypatch.setenv("RIGCHECK_SHARED_DIR", str(tmp_path / "shared"))

    def save_until_full(value: object, file: object) -> None:
        file.write(b"x" * 100_000)  # type: ignore[attr-defined]
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(shared_cache.torch, "save", save_until_full)
        value = shared_cache.cached_tensor("key", lambda: torch.ones(4))
    assert value.tolist() == [1.0] * 4  # the child still has its answer
    assert sorted(p.suffix for p in (tmp_path / "shared").iterdir()) == [".lock"]
    again = shared_cache.cached_tensor("key", lambda: torch.zeros(4))  # computed again, now saved whole
    assert again.tolist() == [0.0] * 4
    assert sorted(p.suffix for p in (tmp_path / "shared").iterdir()) == [".lock", ".pt"]


def test_the_runner_removes_what_a_killed_child_left_half_written(tmp_path: Path) -> None:
    run = Run(RunPlan(1, RunRequest((info("leaves_partial"),), "cpu", "quick"), tmp_path / "logs"))
    run.start()
    assert run.wait(120)
    assert run.stage_status["leaves_partial"] == Status.CRASH
    assert (tmp_path / "logs" / "shared").is_dir() and not list((tmp_path / "logs" / "shared").iterdir())


def test_the_runner_leaves_whole_shared_files(tmp_path: Path) -> None:
    shared = tmp_path / "logs" / "shared"
    shared.mkdir(parents=True)
    (shared / "ref.pt").write_bytes(b"whole")
    run = Run(RunPlan(1, RunRequest((info("steady"),), "cpu", "quick", options={"steps": 1}), tmp_path / "logs"))
    run.start()
    assert run.wait(120)
    assert [p.name for p in shared.iterdir()] == ["ref.pt"]


# -- the sampler's own count of samples never taken --


class QuietHost:
    def read(self) -> HostSample:
        return HostSample(cpus=4, load1=None, busy_cpus=0.0, own_cpus=0.0)


def test_the_sampler_counts_the_ticks_a_slow_listener_made_it_miss() -> None:
    sampler = Sampler(interval=0.05, host=QuietHost(), gpus=[])  # type: ignore[arg-type]
    stalled: list[float] = []

    def stalls_once(sample: object) -> None:
        if not stalled:
            stalled.append(time.monotonic())
            time.sleep(1.0)  # twenty ticks' worth

    sampler.add_listener(stalls_once)
    sampler.start()
    try:
        wait_for(lambda: sampler.missed >= 15, timeout=60)
    finally:
        sampler.stop()
