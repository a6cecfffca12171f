"""The socket of an engine killed with -9 is cleared by the next `runs`, run or cancel; a socket that an engine
still holds (stopped, or about to listen) is never touched."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest
from rigcheck.engine.run.detach import spawn
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store
from rigcheck.engine.store.run_end import CUT_OFF
from stage_infos import TESTS_DIR, fake


@pytest.fixture(autouse=True)
def own_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    return folder


def slow() -> RunRequest:
    # a stage that stops when asked: a SIGTERM to its engine ends the run at once, not after the kill grace
    return RunRequest((fake("slow", "polite_wait", timeout=120),), "cpu", "quick", telemetry=False)


def recorded(store: Path, run_id: int) -> Path:
    with sqlite3.connect(store) as db:
        return Path(db.execute("SELECT control FROM runs WHERE id = ?", (run_id,)).fetchone()[0])


def kill_9(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def runs(store: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TESTS_DIR / "cli_driver.py"), "runs"],
        env=dict(os.environ, RIGCHECK_STORE=str(store)),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=TESTS_DIR,
    )


def test_runs_clears_the_socket_of_an_engine_killed_with_9(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    run_id, engine = spawn(store, slow())
    left = recorded(store, run_id)
    kill_9(engine)
    assert left.is_socket()  # the kernel does not remove it
    listed = runs(store)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr
    assert not left.exists() and not left.parent.exists()  # the socket, and the fresh folder it was in


def test_the_next_run_clears_it_in_the_runtime_folder(
    tmp_path: Path, short_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime = short_dir / "xdg"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    store = tmp_path / "s.db"
    run_id, engine = spawn(store, slow())
    left = recorded(store, run_id)
    assert left.parent == runtime / "rigcheck"
    kill_9(engine)
    assert left.is_socket()
    second, engine = spawn(store, slow())
    try:
        assert not left.exists() and left.parent.is_dir()  # the shared runtime folder stays
        assert recorded(store, second).is_socket()
    finally:
        os.kill(engine, signal.SIGTERM)


def test_a_held_socket_is_never_cleared(tmp_path: Path) -> None:
    from rigcheck.engine.run.sockets import sweep_stale

    store = tmp_path / "s.db"
    run_id, engine = spawn(store, slow())
    held = recorded(store, run_id)
    os.kill(engine, signal.SIGSTOP)  # stopped: it answers nothing, yet the socket is its own
    try:
        assert runs(store).returncode == 0
        assert held.is_socket()
    finally:
        os.kill(engine, signal.SIGCONT)
        os.kill(engine, signal.SIGTERM)
    # a socket bound but not listened on yet, by a live engine (this process): refused, but its pid lives
    own = Store(tmp_path / "t.db")
    mine = own.begin_run(["ok"], "cpu", "quick", sys.executable, ["test"])
    early = tmp_path / "tmp" / "early.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(early))
    try:
        own.record_control(mine, str(early))
        assert sweep_stale(own) == [] and early.is_socket()
    finally:
        sock.close()


def test_a_row_naming_something_else_never_has_it_removed(tmp_path: Path) -> None:
    from rigcheck.engine.run.sockets import sweep_stale

    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["ok"], "cpu", "quick", sys.executable, ["test"])
    store.write_end(run_id, CUT_OFF)
    precious = tmp_path / "precious.txt"
    precious.write_text("keep me")
    store.record_control(run_id, str(precious))  # not a socket: connecting to it is refused, yet it stays
    assert sweep_stale(store) == [] and precious.read_text() == "keep me"
