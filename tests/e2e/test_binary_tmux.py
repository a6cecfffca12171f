"""The real `rigcheck` binary in tmux at 80x24: a stage started by key, its verdict on screen, a quick quit."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from tmux_screen import screen, wait_for

pytestmark = pytest.mark.needs("tmux")  # skipped where missing; a failure in CI (tests/ci_tools.py)


def test_probe_by_key_then_quit_fast(tmp_path: Path, rigcheck_binary: str) -> None:
    session = f"rigcheck-test-{os.getpid()}"
    rigcheck = rigcheck_binary
    # The exit status lands through a rename: the shell's `>` creates the file before echo fills it.
    command = (
        f"RIGCHECK_STORE={tmp_path / 's.db'} RIGCHECK_CONFIG={tmp_path / 'settings.json'} "
        f"TEXTUAL_ANIMATIONS=none {rigcheck} --profile quick --device cpu; "
        f"echo EXITED $? > {tmp_path / 'exit.tmp'}; mv {tmp_path / 'exit.tmp'} {tmp_path / 'exit'}"
    )
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", command], check=True)
    try:
        launched = time.monotonic()
        wait_for(session, lambda text: "Stages" in text and "probe" in text, 60)
        pace = time.monotonic() - launched  # this machine's pace now: the app's own start, imports and all
        subprocess.run(["tmux", "send-keys", "-t", session, "1"], check=True)
        text = wait_for(session, lambda text: any("probe" in line and "PASS" in line for line in text.splitlines()), 90)
        assert "done" in text
        started = time.monotonic()
        subprocess.run(["tmux", "send-keys", "-t", session, "C-q"], check=True)
        # quitting is far less work than starting: 2 s, and on a busy machine (the other xdist worker, other
        # sessions) twice what the start took on top; a quit that waited on a thread, a child or a timeout is longer
        limit = 2.0 + 2 * pace
        while not (tmp_path / "exit").exists():
            assert time.monotonic() - started < limit + 5, f"the app did not quit:\n{screen(session)}"
            time.sleep(0.02)
        elapsed = time.monotonic() - started
        assert (tmp_path / "exit").read_text().split() == ["EXITED", "0"]
        assert elapsed < limit, f"quit took {elapsed:.2f} s, starting {pace:.2f} s"
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
