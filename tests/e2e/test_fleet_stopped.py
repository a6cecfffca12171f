"""`rigcheck fleet` stopped by SIGTERM (from `timeout`, to its whole process group, or to it alone) ends with one line
and the interrupted exit code, never torchrun's SignalException traceback."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fleet_driver import free_port

pytestmark = pytest.mark.timeout(240)


def verify_runs(store: Path) -> bool:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            row = db.execute("SELECT status FROM stages WHERE name = 'verify' AND host = ''").fetchone()
    except sqlite3.Error:  # not made yet, or its tables still being made
        return False
    return row is not None and row[0] == "running"


@pytest.mark.parametrize("to_group", [True, False], ids=["its-process-group-as-timeout-does", "it-alone"])
def test_sigterm_ends_rigcheck_fleet_in_one_line_without_a_traceback(tmp_path: Path, to_group: bool) -> None:
    store = tmp_path / "s.db"
    env = dict(os.environ, RIGCHECK_STORE=str(store))
    env.pop("RIGCHECK_FLEET_KEY", None)  # one host: rigcheck fleet makes one
    fleet = subprocess.Popen(
        [sys.executable, "-m", "rigcheck.tui.cli", "fleet", "--nnodes", "1", "--endpoint", f"127.0.0.1:{free_port()}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a process group of its own, as `timeout` makes one
    )
    try:
        deadline = time.monotonic() + 180
        while not verify_runs(store):  # the event: this host's agent runs its first stage (no stages: the default)
            assert time.monotonic() < deadline and fleet.poll() is None, fleet.communicate()
            time.sleep(0.05)
        if to_group:
            os.killpg(fleet.pid, signal.SIGTERM)
        else:
            fleet.send_signal(signal.SIGTERM)
        _out, err = fleet.communicate(timeout=120)
    finally:
        if fleet.poll() is None:
            os.killpg(fleet.pid, signal.SIGKILL)
    assert "Traceback" not in err and "SignalException" not in err, err
    assert fleet.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert last == "rigcheck fleet: stopped by SIGTERM", err
