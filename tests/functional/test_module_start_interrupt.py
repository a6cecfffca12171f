"""Issue 44: `python -m rigcheck.tui.cli` (what serve's tabs ran) printed a KeyboardInterrupt traceback for a Ctrl-C
40-200 ms in, or lost it and ran on to exit 0. It takes SIGINT over first thing now, as the console script does:
one line and exit 130 wherever in its imports the Ctrl-C lands. Serve's tabs start through rigcheck.tui.entry."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_calls import as_in_a_terminal
from rigcheck.tui.serve_argv import APP_BOOTSTRAP
from test_start_interrupt import ONE_LINE, PIPE_BYTES, Starting


class ModuleStarting(Starting):
    """`python -m rigcheck.tui.cli ARGS` starting, its import lines read one at a time."""

    def __init__(self, args: list[str], store: Path) -> None:
        env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1", RIGCHECK_STORE=str(store), COLUMNS="120")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "rigcheck.tui.cli", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            bufsize=0,
            env=env,
            preexec_fn=as_in_a_terminal,
        )
        assert self.proc.stderr is not None
        fcntl.fcntl(self.proc.stderr.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        self.lines = []


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("more", "after_s"), [(0, 0.0), (30, 0.04), (60, 0.2), (150, 0.0)])
def test_ctrl_c_in_the_imports_of_python_m_rigcheck_tui_cli_is_one_line_and_130(
    tmp_path: Path, more: int, after_s: float
) -> None:
    starting = ModuleStarting(["stages"], tmp_path / "s.db")
    starting.read_until("rigcheck.tui.start_sigint", more)  # what takes SIGINT over
    code, said = starting.interrupt(after_s)
    assert (code, said) == (130, ONE_LINE), "".join(starting.lines)[-3000:]


def test_the_clean_start_still_runs_the_command(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rigcheck.tui.cli", "stages"], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and "probe" in done.stdout, done.stderr


def test_serve_tabs_start_through_the_entry_that_takes_sigint_first() -> None:
    assert "run_module('rigcheck.tui.entry'" in APP_BOOTSTRAP
