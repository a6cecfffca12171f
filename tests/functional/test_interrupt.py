"""A run cut off by SIGKILL of the parent, or by Ctrl-C, keeps what it measured and shows as interrupted."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from cli_calls import as_in_a_terminal
from rigcheck.engine.run import childpath
from rigcheck.engine.store import Store
from stage_infos import TESTS_DIR


def wait_for(predicate, timeout: float = 60.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def stage_rows(path: Path) -> dict[str, tuple[str, int | None]]:
    try:
        with sqlite3.connect(path) as db:
            return {name: (status, pid) for name, status, pid in db.execute("SELECT name, status, pid FROM stages")}
    except sqlite3.OperationalError:  # the file exists, but its tables are still being made
        return {}


def test_sigkill_of_the_parent_leaves_a_readable_store(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    Store(path).close()
    parent = subprocess.Popen([sys.executable, str(TESTS_DIR / "run_driver.py"), str(path)], cwd=TESTS_DIR)
    try:
        wait_for(lambda: stage_rows(path).get("slow", ("", 0))[0] == "running")
        child_pid = stage_rows(path)["slow"][1]
        parent.kill()
        parent.wait(10)
    finally:
        parent.kill()
    wait_for(lambda: not psutil.pid_exists(child_pid) or psutil.Process(child_pid).status() == "zombie", 10)
    # SIGKILL runs no atexit: the shim folder stays until the next rigcheck process sweeps it.
    left = list(Path(tempfile.gettempdir()).glob(f"{childpath.PREFIX}{parent.pid}-*"))
    assert len(left) == 1
    assert left[0] in childpath.sweep_stale()
    assert not left[0].exists()

    store = Store(path)
    run = store.runs()[0]
    assert run["status"] == "interrupted"
    report = store.report(run["id"])
    stages = {row["name"]: row["status"] for row in report["stages"]}
    assert stages == {"ok": "PASS", "slow": "INTERRUPTED"}
    assert [m["name"] for m in report["measurements"]] == ["answer"]


def test_ctrl_c_of_the_cli_stops_the_child_and_marks_the_run(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    env = dict(os.environ, RIGCHECK_STORE=str(path))
    cli = subprocess.Popen(
        # verify, not probe: in a warm child probe can end before the signal lands (the stages' rows lag a little)
        [sys.executable, "-m", "rigcheck.tui.cli", "run", "verify", "--device", "cpu"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_in_a_terminal,
    )
    wait_for(lambda: path.exists() and stage_rows(path).get("verify", ("", 0))[0] == "running")
    child_pid = stage_rows(path)["verify"][1]
    cli.send_signal(signal.SIGINT)
    _, err = cli.communicate(timeout=30)
    assert cli.returncode == 130, err
    assert "Traceback" not in err
    assert not psutil.pid_exists(child_pid) or psutil.Process(child_pid).status() == "zombie"
    assert Store(path).runs()[0]["status"] == "interrupted"
