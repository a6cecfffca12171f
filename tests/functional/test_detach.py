"""Runs that outlive their terminal: detaching, following, cancel, one run per device, a killed engine, a full disk."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from rigcheck.engine.events import Measurement, RunFinished
from rigcheck.engine.run.control import ControlServer, control_path
from rigcheck.engine.run.detach import spawn
from rigcheck.engine.run.follow import Follower
from rigcheck.engine.run.owner import OwnedRun
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store
from stage_infos import TESTS_DIR, fake


def cli(store: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RIGCHECK_STORE=str(store), COLUMNS="120")
    return subprocess.run(
        [sys.executable, str(TESTS_DIR / "cli_driver.py"), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=TESTS_DIR,
    )


def wait_for(predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def stage_status(path: Path, run_id: int, stage: str) -> str | None:
    with sqlite3.connect(path) as db:
        row = db.execute("SELECT status FROM stages WHERE run_id = ? AND name = ?", (run_id, stage)).fetchone()
    return row[0] if row else None


def request(*names: str, telemetry: bool = False) -> RunRequest:
    # waits: until cancelled, as real stages stop (slow sleeps through a cancel, until the runner kills it 3 s on)
    infos = {"slow": fake("slow", timeout=120), "waits": fake("waits", "polite_wait", timeout=120)}
    return RunRequest(tuple(infos.get(n, fake(n)) for n in names), "cpu", "quick", telemetry=telemetry)


def test_a_detached_run_finishes_with_its_parent_gone(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    started = cli(path, "run", "ok", "nap", "--detach", "--no-telemetry")
    assert started.returncode == 0, started.stderr
    assert "run 1 started in the background" in started.stdout and "rigcheck follow 1" in started.stdout
    store = Store(path)
    assert store.is_live(store.run(1))  # the parent has exited; the engine carries the run
    wait_for(lambda: store.run(1)["status"] != "running")
    run = store.run(1)
    assert (run["status"], run["exit_code"]) == ("complete", 0)
    assert stage_status(path, 1, "nap") == "PASS"
    wait_for(lambda: not psutil.pid_exists(run["pid"]), 20)  # its last words are written after the run's end
    log = (tmp_path / "s.logs" / "run-1" / "engine.log").read_text()
    assert "run 1 ended, exit code 0" in log
    recorded = Path(run["control"])
    assert not recorded.exists() and not recorded.parent.exists()  # the engine took its socket (and folder) with it


def test_two_followers_see_the_same_events(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    run_id, _ = spawn(path, request("ok", "nap"))
    followers = [Follower(path, run_id), Follower(path, run_id)]
    seen: list[list[object]] = [[], []]
    deadline = time.monotonic() + 60
    while not all(any(isinstance(e, RunFinished) for e in events) for events in seen):
        assert time.monotonic() < deadline
        for follower, events in zip(followers, seen, strict=True):
            events += follower.poll()
        time.sleep(0.05)
    assert seen[0] == seen[1]
    figures = [e.name for e in seen[0] if isinstance(e, Measurement)]
    assert figures == ["answer", *(f"step {n}" for n in range(1, 7))]


def test_two_follow_commands_print_the_same_summary(tmp_path: Path) -> None:
    """`follow` with no number finds the live run: the nap waits for a release file until both followers have
    said its stage started (on a busy host a follower's start can outlast a three-second nap)."""
    path, release = tmp_path / "s.db", tmp_path / "release"
    held = RunRequest((fake("ok"), fake("nap")), "cpu", "quick", options={"release": str(release)}, telemetry=False)
    run_id, _ = spawn(path, held)
    env = dict(os.environ, RIGCHECK_STORE=str(path), COLUMNS="120")
    command = [sys.executable, str(TESTS_DIR / "cli_driver.py"), "follow"]
    procs = [
        subprocess.Popen(argv, env=env, cwd=TESTS_DIR, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for argv in (command, [*command, str(run_id)])
    ]
    heads = []
    for proc in procs:
        assert proc.stderr is not None
        head = ""
        while "> nap on cpu" not in head and (line := proc.stderr.readline()):
            head += line
        heads.append(head)
    release.touch()
    outs = [proc.communicate(timeout=120) for proc in procs]
    outs = [(out, head + err) for (out, err), head in zip(outs, heads, strict=True)]
    assert [proc.returncode for proc in procs] == [0, 0], outs
    assert outs[0][0] == outs[1][0] and "step 6" in outs[0][0] and "slept" in outs[0][0]
    assert "> nap on cpu" in outs[0][1] and "< nap: PASS" in outs[0][1]


def test_cancel_from_a_follower(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    run_id, _ = spawn(path, request("ok", "waits"))
    wait_for(lambda: stage_status(path, run_id, "waits") == "running")
    listed = cli(path, "runs").stdout
    assert any(line.split()[:1] == [str(run_id)] and "LIVE" in line for line in listed.splitlines()), listed
    done = cli(path, "cancel", str(run_id))
    assert done.returncode == 0 and f"run {run_id}: asked the engine to stop the run" in done.stdout
    followed = cli(path, "follow", str(run_id))
    assert followed.returncode == 130, followed.stderr  # a stopped run ends as Ctrl-C would end it
    assert followed.stderr.strip().splitlines()[-1] == "exit 130: stopped before the end"  # as `run` ends
    store = Store(path)
    assert store.run(run_id)["status"] == "cancelled"
    assert stage_status(path, run_id, "waits") == "SKIP" and stage_status(path, run_id, "ok") == "PASS"
    listed = cli(path, "history").stdout
    assert "LIVE" not in listed and "cancelled" in listed
    again = cli(path, "cancel", str(run_id))
    assert again.returncode == 2 and again.stderr.strip() == f"rigcheck: run {run_id} is not running (cancelled)"


def test_follow_with_no_live_run_is_one_line(tmp_path: Path) -> None:
    done = cli(tmp_path / "s.db", "follow")
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "no live run to follow" in done.stderr


def test_sigkill_of_the_engine_is_marked_interrupted_at_the_next_start(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    run_id, engine = spawn(path, request("ok", "slow"))
    wait_for(lambda: stage_status(path, run_id, "slow") == "running")
    with sqlite3.connect(path) as db:
        child = db.execute("SELECT pid FROM stages WHERE name = 'slow'").fetchone()[0]
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    os.kill(engine, signal.SIGKILL)
    wait_for(lambda: not psutil.pid_exists(engine) or psutil.Process(engine).status() == psutil.STATUS_ZOMBIE)
    wait_for(lambda: not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE, 10)
    with sqlite3.connect(path) as db:
        left = Path(db.execute("SELECT control FROM runs WHERE id = ?", (run_id,)).fetchone()[0])
    assert left.is_socket()  # left behind by the dead engine, at the path it recorded
    store = Store(path)  # the next start
    report = store.report(run_id)
    assert report["run"]["status"] == "interrupted"
    assert {s["name"]: s["status"] for s in report["stages"]} == {"ok": "PASS", "slow": "INTERRUPTED"}
    assert [m["name"] for m in report["measurements"]] == ["answer"]
    assert bystander.poll() is None  # nothing unrelated was killed
    bystander.kill()
    bystander.wait()
    refused = cli(path, "cancel", str(run_id))
    assert refused.returncode == 2 and "not running (interrupted)" in refused.stderr
    assert not left.exists() and not left.parent.exists()  # the cancel cleared the dead engine's socket
    # the dead engine's socket is cleaned up, never trusted, and the device is free again
    server = ControlServer(control_path(path, run_id), lambda op: None)
    server.close()
    run_id2, _ = spawn(path, request("ok"))
    wait_for(lambda: store.run(run_id2)["status"] != "running")
    assert store.run(run_id2)["status"] == "complete"


def test_a_second_run_on_the_same_device_is_refused_unless_forced(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    run_id, _ = spawn(path, request("ok", "waits"))
    refused = cli(path, "run", "ok", "--no-telemetry")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1
    assert f"run {run_id} (pid" in refused.stderr and f"rigcheck follow {run_id}" in refused.stderr
    forced = cli(path, "run", "ok", "--no-telemetry", "--force")
    assert forced.returncode == 0, forced.stderr
    store = Store(path)
    figure = store.report(store.latest_run_id())["measurements"][0]
    assert figure["conditions"]["other_runs_on_device"] == [run_id]
    assert figure["conditions"]["trust"] == "SUSPECT"
    assert "used the same device at the same time" in figure["conditions"]["trust_reasons"][-1]
    assert cli(path, "cancel", str(run_id)).returncode == 0


class FullDisk(Store):
    """A store whose disk fills up when the first figure arrives."""

    def record(self, run_id, event):  # type: ignore[no-untyped-def]
        if isinstance(event, Measurement):
            raise sqlite3.OperationalError("database or disk is full")
        super().record(run_id, event)


def test_a_full_disk_ends_the_run_with_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = FullDisk(tmp_path / "s.db")
    owned = OwnedRun(store, request("ok", "slow")).start()
    assert owned.wait(60)
    assert owned.finish() == 4
    run = store.run(owned.run_id)
    assert run["status"] == "error" and "database or disk is full" in run["error"]
    report = store.report(owned.run_id)
    assert {s["name"]: s["status"] for s in report["stages"]} == {"ok": "SKIP", "slow": "SKIP"}  # stopped at once
    unrun = [v["explanation"] for v in report["verdicts"] if v["stage"] == "slow"]
    assert unrun == ["not run: the store could not be written (disk full)"], unrun  # nobody cancelled it (issue 35.11)
    with sqlite3.connect(tmp_path / "s.db") as db:  # what was stored before the disk filled stays
        kinds = [kind for (kind,) in db.execute("SELECT kind FROM events WHERE stage = 'ok' ORDER BY id")]
    assert kinds[:2] == ["StageStarted", "Progress"]
    assert "the store could not be written (database or disk is full)" in capsys.readouterr().err


def test_a_clean_run_has_no_error(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    owned = OwnedRun(store, request("ok")).start()
    assert owned.wait(60) and owned.finish() == 0
    run = store.run(owned.run_id)
    assert run["status"] == "complete" and run["error"] is None
    assert (owned.log_dir / "ok.log").stat().st_mode & 0o777 == 0o600  # whatever the umask


def test_a_request_crosses_into_the_engine_whole() -> None:
    from rigcheck.engine.registry import STAGES

    sent = RunRequest(tuple(STAGES.values()), "all", "full", "/usr/bin/python3", ("cuda:0", "cuda:1"), {"duration": 5})
    assert RunRequest.from_json(sent.to_json()) == sent
