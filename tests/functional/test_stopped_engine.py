"""An engine that stops answering (SIGSTOP, or hung) is said within seconds by `follow` and the follower the
app uses, which keep following; a cancel it cannot answer is said to be queued, and takes effect on resume."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import psutil
import pytest
from rigcheck.engine.events import LogLine, RunFinished
from rigcheck.engine.run import follow as following
from rigcheck.engine.run.control import ControlServer, control_path
from rigcheck.engine.run.detach import spawn
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store
from stage_infos import TESTS_DIR, fake


def cli(store: Path, *args: str, **popen: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(TESTS_DIR / "cli_driver.py"), *args],
        env=dict(os.environ, RIGCHECK_STORE=str(store), COLUMNS="120"),
        text=True,
        cwd=TESTS_DIR,
        **popen,  # type: ignore[call-overload]
    )


def wait_for(predicate, timeout: float = 60.0, what: str = "") -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def status(store: Path, run_id: int) -> str:
    with sqlite3.connect(store) as db:
        return db.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0]


def stage_status(store: Path, run_id: int, stage: str) -> str | None:
    with sqlite3.connect(store) as db:
        row = db.execute("SELECT status FROM stages WHERE run_id = ? AND name = ?", (run_id, stage)).fetchone()
    return row[0] if row else None


@contextmanager
def stopped_engine(store: Path) -> Iterator[tuple[int, int]]:
    """A real engine carrying `ok` then `slow`, SIGSTOPped while `slow` runs; always resumed, and its run
    stopped, at the end (`slow` waits until cancelled: a cancel ends it at once, not after the kill grace)."""
    slow = fake("slow", "polite_wait", timeout=120)
    run_id, engine = spawn(store, RunRequest((fake("ok"), slow), "cpu", "quick", telemetry=False))
    try:
        wait_for(lambda: stage_status(store, run_id, "slow") == "running", what="the slow stage")
        os.kill(engine, signal.SIGSTOP)
        # SIGSTOP lands a moment later: a follower started before it would find a running engine, whose
        # stream it then waits on in vain (a subscribe that times out is not tried again)
        wait_for(lambda: psutil.Process(engine).status() == psutil.STATUS_STOPPED, what="the engine to stop")
        yield run_id, engine
    finally:
        with suppress(ProcessLookupError):
            os.kill(engine, signal.SIGCONT)
            if status(store, run_id) == "running":
                os.kill(engine, signal.SIGTERM)  # the engine cancels its run on SIGTERM


def test_follow_says_a_stopped_engine_is_stopped_and_keeps_following(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    err = tmp_path / "follow.err"
    with stopped_engine(store) as (run_id, engine), err.open("w") as sink:
        follow = cli(store, "follow", str(run_id), stdout=subprocess.DEVNULL, stderr=sink)
        try:
            wait_for(lambda: "is stopped" in err.read_text(), 60, "follow to say the engine is stopped")
            assert follow.poll() is None  # it keeps following
            said = err.read_text()
            assert f"run {run_id}: its engine (pid {engine}) is stopped" in said and f"kill -CONT {engine}" in said
            os.kill(engine, signal.SIGCONT)
            wait_for(lambda: "answers again" in err.read_text(), 60, "follow to say the engine answers again")
            done = cli(store, "cancel", str(run_id), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            assert done.wait(60) == 0
            assert follow.wait(60) == 130  # the run's own exit code: it was cancelled
        finally:
            if follow.poll() is None:
                follow.kill()
                follow.wait()
    assert "Traceback" not in err.read_text()


def test_cancel_of_a_stopped_engine_says_queued_and_happens_on_resume(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with stopped_engine(store) as (run_id, engine):
        asked = cli(store, "cancel", str(run_id), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, errors = asked.communicate(timeout=60)
        assert asked.returncode == 0, errors
        assert "timed out" not in out + errors and "Traceback" not in errors
        assert f"engine (pid {engine}) is stopped" in out and "the cancel is queued" in out
        assert f"kill -CONT {engine}" in out
        assert status(store, run_id) == "running"  # nothing yet: the engine is stopped
        os.kill(engine, signal.SIGCONT)
        wait_for(lambda: status(store, run_id) != "running", 60, "the queued cancel to take effect")
        assert status(store, run_id) == "cancelled"  # as the message said


def test_a_hung_engine_is_said_within_seconds_and_its_return_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine that is not stopped but does not answer (hung): the follower's ping times out."""
    monkeypatch.setattr(following, "CHECK_S", 0.5)  # silence before a ping; the ping's own timeout is unchanged
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["ok"], "cpu", "quick", sys.executable, ["test"])  # live: this process's own
    hang = threading.Event()
    hang.set()
    server = ControlServer(control_path(store.path, run_id), lambda op: hang.wait(30) and None)
    hang.clear()  # from now on, every request waits
    follower = following.RunFollower(store, run_id)
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.extend(follower.follow()), daemon=True)
    started = time.monotonic()
    thread.start()
    try:
        wait_for(lambda: any(isinstance(i, following.EngineQuiet) for i in seen), 60, "the follower to notice")
        quiet = next(i for i in seen if isinstance(i, following.EngineQuiet))
        assert not quiet.answering and f"its engine (pid {os.getpid()}) does not answer" in quiet.text
        assert time.monotonic() - started < 50  # seconds, not forever (generous: a busy machine)
        hang.set()
        wait_for(lambda: any(isinstance(i, following.EngineQuiet) and i.answering for i in seen), 60, "the return")
        store.record(run_id, LogLine("ok", "still here"))
        store.record(run_id, RunFinished(run_id, "complete", 0))
        thread.join(30)
    finally:
        hang.set()
        follower.stop.set()
        server.close()
    assert follower.ended == "complete"
    assert [type(i).__name__ for i in seen if not isinstance(i, following.EngineQuiet)] == ["LogLine", "RunFinished"]


def test_an_answering_engine_is_never_said_to_be_quiet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(following, "CHECK_S", 0.5)  # silence before a ping; the ping's own timeout is unchanged
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["ok"], "cpu", "quick", sys.executable, ["test"])
    server = ControlServer(control_path(store.path, run_id), lambda op: None)
    follower = following.RunFollower(store, run_id)
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.extend(follower.follow()), daemon=True)
    thread.start()
    try:
        time.sleep(3 * following.CHECK_S)  # three checks' worth of silence from the run; the engine answers each ping
        store.record(run_id, RunFinished(run_id, "complete", 0))
        thread.join(30)
    finally:
        follower.stop.set()
        server.close()
    assert follower.ended == "complete" and not [i for i in seen if isinstance(i, following.EngineQuiet)]


def test_a_follower_that_joins_a_stopped_engine_says_so_then_takes_its_stream(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    with stopped_engine(store) as (run_id, engine):
        follower = following.RunFollower(Store(store), run_id)
        seen: list[object] = []
        thread = threading.Thread(target=lambda: seen.extend(follower.follow()), daemon=True)
        thread.start()
        try:
            wait_for(lambda: any(isinstance(i, following.EngineQuiet) for i in seen), 60, "the follower to notice")
            assert f"pid {engine}) is stopped" in next(i.text for i in seen if isinstance(i, following.EngineQuiet))
            assert not follower.subscribed
            os.kill(engine, signal.SIGCONT)
            wait_for(lambda: follower.subscribed, 60, "the follower to join the engine's stream once it runs")
        finally:
            follower.stop.set()
            thread.join(30)


async def test_the_app_says_a_stopped_engine_is_stopped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes import FakeSampler, h200_samples
    from pilot_helpers import row, wait_until
    from rigcheck.tui.app import RigcheckApp

    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))
    store = Store(tmp_path / "s.db")
    app = RigcheckApp(
        store, FakeSampler(h200_samples()), stages=[fake("slow", "polite_wait", timeout=120)], device="cpu"
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("a")
        await wait_until(pilot, lambda: row(app, "slow")[2] == "running")
        engine = store.run(app.run_id)["pid"]
        notices = lambda: "\n".join(n.message for n in app._notifications)  # noqa: E731
        os.kill(engine, signal.SIGSTOP)
        try:
            await wait_until(pilot, lambda: f"engine (pid {engine}) is stopped" in notices(), 60)
            assert "is stopped" in "\n".join(app.query_one("#log").texts)
            await pilot.press("c")  # said to be queued, and the app goes on
            await pilot.pause(0.2)
            assert "the cancel of its running stage is queued" in notices() and app.is_running
        finally:
            os.kill(engine, signal.SIGCONT)
        await wait_until(pilot, lambda: "answers again" in notices(), 60)
        await wait_until(pilot, lambda: not app.running, 60)  # the queued cancel took effect
    assert store.run(store.latest_run_id())["status"] == "complete"
