"""`rigcheck history` read as a new user reads it: each run's worst verdict, and the whole date at 80 columns."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.store import Store


def history(store: Path, columns: int, *args: str, terminal: bool = True) -> str:
    """`rigcheck history` on a terminal of `columns` (a pty), or piped."""
    env = dict(os.environ, RIGCHECK_STORE=str(store), COLUMNS=str(columns))
    command = [sys.executable, "-m", "rigcheck.tui.cli", "history", *args]
    if not terminal:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    done = subprocess.run(command, stdout=follower, stderr=subprocess.PIPE, env=env, timeout=60)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the pty is drained and closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert done.returncode == 0, done.stderr
    text = b"".join(chunks).decode().replace("\r\n", "\n")
    return re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", text)  # colours off


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


def test_piped_history_and_runs_never_wrap_like_show(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    stages = ["probe", "health", "verify", "hostbugs", "matmul", "bandwidth", "links", "training", "burn"]
    for _ in range(3):
        run_id = store.begin_run(stages, "cuda:0,cuda:1,cuda:2,cuda:3", "standard", "p", [])
        store.end_run(run_id, "complete", 0)
    for command in ("history", "runs"):
        env = dict(os.environ, RIGCHECK_STORE=str(tmp_path / "s.db"), COLUMNS="80")
        done = subprocess.run(
            [sys.executable, "-m", "rigcheck.tui.cli", command], capture_output=True, text=True, env=env, timeout=60
        )
        assert done.returncode == 0, done.stderr
        rows = [line for line in done.stdout.splitlines() if re.match(r"\s*\d+\s", line)]
        assert len(rows) == 3, done.stdout  # one line a run, whatever COLUMNS says
        assert all(", ".join(stages) in line for line in rows)


@pytest.mark.parametrize("bad", ["-1", "0", "x"])
def test_limit_takes_only_a_positive_count(tmp_path: Path, bad: str) -> None:
    from cli_calls import assert_one_line_error, rigcheck

    Store(tmp_path / "s.db")
    assert_one_line_error(rigcheck("history", "--limit", bad, store=tmp_path / "s.db"), "--limit")


def test_help_says_what_limit_run_and_interval_take(tmp_path: Path) -> None:
    from cli_calls import rigcheck

    said = {
        ("history", "--help"): "list the newest N runs (default 30)",
        ("show", "--help"): "a run number or 'last'",
        ("export", "--help"): "a run number or 'last'",
        ("monitor", "--help"): "(default 1,",
    }
    for args, words in said.items():
        done = rigcheck(*args, store=tmp_path / "s.db")
        assert done.returncode == 0 and words in " ".join(done.stdout.split()), (args, done.stdout)


def test_a_store_of_health_checks_only_lists_no_empty_table(tmp_path: Path) -> None:
    """`rigcheck check` stores each check as a run of profile "passive", kept apart from runs: with nothing else,
    history says there are no runs yet and counts the checks, never an empty table above them."""
    store = Store(tmp_path / "s.db")
    for _ in range(2):
        check = store.begin_run(["health"], "cpu", "passive", "p", [])
        store.end_run(check, "complete", 0)
    lines = history(tmp_path / "s.db", 80, terminal=False).strip().splitlines()
    assert lines == ["no runs yet", "2 health check(s) kept apart: `rigcheck history --checks`"], lines


def test_a_real_run_beside_the_checks_is_listed_in_the_table(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    check = store.begin_run(["health"], "cpu", "passive", "p", [])
    store.end_run(check, "complete", 0)
    run = store.begin_run(["probe"], "cpu", "quick", "p", [])
    store.end_run(run, "complete", 0)
    text = history(tmp_path / "s.db", 80, terminal=False)
    rows = [line for line in text.splitlines() if re.match(r"\s*\d+\s+\d{4}-", line)]  # a run and its date
    assert len(rows) == 1 and "probe" in rows[0] and "rigcheck runs" in text and "no runs yet" not in text, text
    assert text.strip().splitlines()[-1] == "1 health check(s) kept apart: `rigcheck history --checks`", text
