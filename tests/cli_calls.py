"""The real `rigcheck` command as a subprocess with its own store, and the shape of a one-line error."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

RIGCHECK = [sys.executable, "-m", "rigcheck.tui.cli"]


def rigcheck(*args: str, store: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, RIGCHECK_STORE=str(store))
    return subprocess.run([*RIGCHECK, *args], capture_output=True, text=True, env=env, timeout=timeout, check=False)


def assert_one_line_error(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    for word in words:
        assert word in lines[0]


def as_in_a_terminal() -> None:
    """A child's SIGINT as a terminal's foreground process has it. A suite started in the background (`.ci/run &`)
    inherits SIGINT ignored, and Python then never turns it into KeyboardInterrupt: a Ctrl-C test would hang."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
