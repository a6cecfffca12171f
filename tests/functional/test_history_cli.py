"""`rigcheck history` read as a new user reads it: each run's worst verdict, and the whole date at 80 columns."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.store import Store


def history(store: Path, columns: int) -> str:
    env = dict(os.environ, RIGCHECK_STORE=str(store), COLUMNS=str(columns))
    done = subprocess.run(
        [sys.executable, "-m", "rigcheck.tui.cli", "history"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("columns", [80, 120])
def test_history_shows_each_runs_worst_verdict_and_the_whole_date(tmp_path: Path, columns: int) -> None:
    store = Store(tmp_path / "s.db")
    outcomes = {Status.PASS: 0, Status.FAIL: 1, Status.CRASH: 3}
    for status, code in outcomes.items():
        run_id = store.begin_run(["probe", "verify", "hostbugs", "matmul", "bandwidth"], "cuda:0", "standard", "p", [])
        store.record(run_id, Verdict("probe", "build", Status.PASS, "fine"))
        store.record(run_id, Verdict("verify", "check", status, "what happened"))
        store.end_run(run_id, "complete", code)
    quiet = store.begin_run(["probe"], "cpu", "quick", "p", [])  # no verdict at all
    store.end_run(quiet, "interrupted", 130)
    text = history(tmp_path / "s.db", columns)
    assert max(len(line) for line in text.splitlines()) <= columns
    rows = {line.split()[0]: line for line in text.splitlines() if re.match(r"\s*\d+\s", line)}
    assert set(rows) == {"1", "2", "3", "4"}
    for line in rows.values():
        assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d", line), f"date cut off: {line!r}"
    assert " PASS " in rows["1"] and " FAIL " in rows["2"] and " CRASH " in rows["3"]
    assert "INTERRUPTED" in rows["4"] and " - " in rows["4"]
