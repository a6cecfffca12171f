"""Ctrl-C at any moment of `rigcheck`'s start-up, its imports included, ends in one line and exit 130, for every
subcommand (issue 35.13: it printed a KeyboardInterrupt traceback from whichever import it hit).

The real console script runs with `PYTHONPROFILEIMPORTTIME=1`: each import it finishes is a line on its stderr,
so the test sees where it is. Its stderr pipe holds only 4 KiB, so the child cannot run more than 4 KiB of import
lines ahead of what the test has read: a SIGINT sent after a given import line lands while the imports still run,
on a fast machine or a slow, busy one, whatever the delay added (the child waits for the test to read on).
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
from cli_calls import as_in_a_terminal

SCRIPT = Path(sys.executable).parent / "rigcheck"
PIPE_BYTES = 4096  # the smallest pipe Linux makes: one page
ONE_LINE = ["rigcheck: interrupted"]
PYTHONS_OWN_START = "Fatal Python error: init_import_site"  # SIGINT while `site` runs: the interpreter's
SUBCOMMANDS = [
    ["run", "probe", "--device", "cpu", "--no-telemetry"],
    ["compare", "1", "2"],
    ["export", "1"],
    ["show", "1"],
    ["history"],
    ["runs"],
    ["follow"],
    ["cancel", "1"],
    ["stages"],
    ["monitor", "--count", "1"],
    ["app"],
    ["serve", "--port", "0"],  # each ends at once if the signal were lost, never hangs
    ["check"],
    ["slurm-health"],
    ["references"],
    ["fleet", "--nnodes", "0"],
    ["--help"],
]


@pytest.fixture(scope="module", autouse=True)
def console_script() -> None:
    text = SCRIPT.read_text() if SCRIPT.exists() else ""
    assert "rigcheck.tui.entry" in text, (
        f"{SCRIPT} is not the console script pyproject.toml names (rigcheck.tui.entry:main): "
        "reinstall the package (`pip install -e .`) so the script is made again"
    )


class Starting:
    """The real `rigcheck ARGS` starting, its import lines read one at a time."""

    def __init__(self, args: list[str], store: Path) -> None:
        env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1", RIGCHECK_STORE=str(store), COLUMNS="120")
        self.proc = subprocess.Popen(
            [str(SCRIPT), *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            bufsize=0,  # read line by line from the pipe itself: no read-ahead lets the child run on
            env=env,
            preexec_fn=as_in_a_terminal,
        )
        assert self.proc.stderr is not None
        fcntl.fcntl(self.proc.stderr.fileno(), fcntl.F_SETPIPE_SZ, PIPE_BYTES)
        self.lines: list[str] = []

    def read_until(self, module: str, more: int = 0) -> None:
        """Read import lines until `module` has been imported, then `more` lines after it."""
        assert self.proc.stderr is not None
        while True:
            line = self.proc.stderr.readline().decode(errors="replace")
            assert line, f"{module} was never imported: {self.said()}"
            self.lines.append(line)
            if line.startswith("import time:") and line.split("|")[-1].strip() == module:
                break
        for _ in range(more):
            self.lines.append(self.proc.stderr.readline().decode(errors="replace"))

    def interrupt(self, after_s: float = 0.0) -> tuple[int, list[str]]:
        """SIGINT after `after_s`; the exit code and what it said beside its import lines."""
        time.sleep(after_s)
        self.proc.send_signal(signal.SIGINT)
        assert self.proc.stderr is not None
        try:
            _, rest = self.proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:  # the signal was lost and the command went on: never a pass
            self.proc.kill()
            _, rest = self.proc.communicate()
        code = self.proc.returncode
        self.lines += rest.decode(errors="replace").splitlines(keepends=True)
        return code, self.said()

    def said(self) -> list[str]:
        return [line.rstrip("\n") for line in "".join(self.lines).splitlines() if not line.startswith("import time:")]


@pytest.mark.timeout(600)
@pytest.mark.parametrize(("more", "after_s"), [(0, 0.0), (0, 0.05), (20, 0.1), (60, 0.2), (120, 0.3), (150, 0.0)])
def test_ctrl_c_while_the_command_line_is_imported_is_one_line_and_exit_130(
    tmp_path: Path, more: int, after_s: float
) -> None:
    starting = Starting(["stages"], tmp_path / "s.db")
    starting.read_until("rigcheck.tui.entry", more)  # from here the child is at most 4 KiB of imports ahead
    code, said = starting.interrupt(after_s)
    assert (code, said) == (130, ONE_LINE), "".join(starting.lines)[-3000:]


@pytest.mark.timeout(900)
@pytest.mark.parametrize("args", SUBCOMMANDS, ids=lambda args: args[0].lstrip("-"))
def test_every_subcommand_interrupted_in_its_start_is_one_line_and_exit_130(tmp_path: Path, args: list[str]) -> None:
    starting = Starting(args, tmp_path / "s.db")
    starting.read_until("rigcheck.tui.entry", 100)  # half-way through the command line's imports
    code, said = starting.interrupt()
    assert (code, said) == (130, ONE_LINE), "".join(starting.lines)[-3000:]


@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "args",
    [["run", "probe", "--device", "cpu", "--no-telemetry"], ["monitor", "--count", "1"], ["app"]],
    ids=lambda args: args[0],
)
def test_ctrl_c_in_a_commands_own_imports_is_one_line_and_exit_130(tmp_path: Path, args: list[str]) -> None:
    """After the command line is imported, a command imports what it alone needs (over 4 KiB of import lines for
    these three): a Ctrl-C there is one line and 130 too, and leaves no child behind (`run` starts its first stage
    child beside its preflight)."""
    starting = Starting(args, tmp_path / "s.db")
    starting.read_until("rigcheck.tui.cli", 1)  # the command's own first import
    pid = starting.proc.pid
    code, said = starting.interrupt()
    assert (code, said) == (130, ONE_LINE), "".join(starting.lines)[-3000:]
    left = [p for p in psutil.process_iter(["ppid", "cmdline"]) if p.info["ppid"] == pid]
    assert not left, [p.info["cmdline"] for p in left]


@pytest.mark.timeout(300)
def test_ctrl_c_the_moment_it_is_spawned_prints_no_traceback_of_rigcheck(tmp_path: Path) -> None:
    """Before Python has run a line of rigcheck, SIGINT is the interpreter's: it ends it by the signal itself (the
    shell says 130) with nothing printed, or, while `site` runs the environment's `.pth` files (an editable
    install's finder, setuptools' distutils shim), Python reports its own failed start. Neither is rigcheck's code;
    once rigcheck's entry runs, it is the one line and 130, never a traceback of rigcheck's."""
    for _ in range(5):
        env = dict(os.environ, RIGCHECK_STORE=str(tmp_path / "s.db"))
        proc = subprocess.Popen(
            [str(SCRIPT), "stages"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            preexec_fn=as_in_a_terminal,
        )
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        text = err.decode(errors="replace")
        said = text.splitlines()
        if proc.returncode == 1 and said and said[0].startswith(PYTHONS_OWN_START):
            assert "rigcheck/tui" not in text and "tui/entry.py" not in text, text[-3000:]
            continue
        assert (proc.returncode, said) in ((-signal.SIGINT, []), (130, ONE_LINE)), text[-3000:]
