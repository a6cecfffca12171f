"""A foreground `rigcheck run` stopped by SIGTERM or SIGHUP stores what stopped it, never "cancelled by the user";
Ctrl-C still says the user cancelled. The exit code is 130 either way."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_calls import as_in_a_terminal
from rigcheck.engine.store import Store
from stage_infos import TESTS_DIR


def stage_status(store: Path, name: str) -> str:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            row = db.execute("SELECT status FROM stages WHERE name = ?", (name,)).fetchone()
    except sqlite3.Error:  # not made yet, or its tables still being made
        return ""
    return "" if row is None else str(row[0])


def stopped_by(tmp_path: Path, signum: int) -> tuple[int, str, dict[str, str]]:
    """Run `waits` (until cancelled) then `ok`; send `signum` once `waits` runs: the exit code, stderr, and what
    each stage's stage verdict says."""
    store = tmp_path / "s.db"
    process = subprocess.Popen(
        [sys.executable, "cli_driver.py", "run", "waits", "ok", "--no-telemetry", "--device", "cpu"],
        cwd=TESTS_DIR,
        env=dict(os.environ, RIGCHECK_STORE=str(store), COLUMNS="120"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=as_in_a_terminal,
    )
    try:
        deadline = time.monotonic() + 120
        while stage_status(store, "waits") != "running":  # the event: its child runs
            assert time.monotonic() < deadline and process.poll() is None, process.communicate()
            time.sleep(0.02)
        process.send_signal(signum)
        _out, err = process.communicate(timeout=60)
    finally:
        process.kill()
    report = Store(store).report(Store(store).runs()[0]["id"])
    assert report is not None
    said = {v["stage"]: v["explanation"] for v in report["verdicts"] if v["check_name"] == "stage"}
    return process.returncode, err, said


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_a_run_stopped_by_a_signal_says_which_signal_never_the_user(tmp_path: Path, signum: int) -> None:
    code, err, said = stopped_by(tmp_path, signum)
    name = signal.Signals(signum).name
    assert code == 130, err
    assert "Traceback" not in err, err
    assert said["waits"] == f"stopped by {name}", said
    assert said["ok"] == f"not run: stopped by {name}", said
    assert "user" not in " ".join(said.values()), said


def test_ctrl_c_still_says_the_user_cancelled(tmp_path: Path) -> None:
    code, err, said = stopped_by(tmp_path, signal.SIGINT)
    assert code == 130, err
    assert "Traceback" not in err, err
    assert said["waits"] == "cancelled by the user", said
    assert said["ok"] == "not run: the run was cancelled", said
