"""Ctrl-C in the last moment of a run (as its end is stored): the exit code said is the one stored, and the
reports asked for are written (or named as not written), never silently missing."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from cli_calls import as_in_a_terminal
from stage_infos import TESTS_DIR


def stored_end(store: Path) -> tuple[str, int | None] | None:
    try:
        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as db:
            row = db.execute("SELECT status, exit_code FROM runs ORDER BY id DESC LIMIT 1").fetchone()
    except sqlite3.Error:
        return None
    return None if row is None else (row[0], row[1])


def test_ctrl_c_as_the_run_ends_gives_the_stored_exit_code_and_the_reports(tmp_path: Path) -> None:
    for attempt in range(6):
        folder = tmp_path / str(attempt)
        folder.mkdir()
        store, report = folder / "s.db", folder / "r.json"
        process = subprocess.Popen(
            [sys.executable, "cli_driver.py", "run", "ok", "--no-telemetry", "--json", str(report)],
            cwd=TESTS_DIR,
            env=dict(os.environ, RIGCHECK_STORE=str(store), COLUMNS="120"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=as_in_a_terminal,
        )
        deadline = time.monotonic() + 120
        while (stored_end(store) or ("", None))[0] in ("", "running"):  # the moment its end is stored
            assert time.monotonic() < deadline and process.poll() is None, process.communicate()
            time.sleep(0.005)
        time.sleep(0.03 * attempt)  # from at once to a few tenths of a second after
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        _out, err = process.communicate(timeout=120)
        status, code = stored_end(store) or ("?", None)
        assert process.returncode == code, (attempt, process.returncode, status, code, err)
        assert report.exists() or "could not write" in err, (attempt, err)
        assert "stored in" in err, (attempt, err)  # the summary's last line was said
