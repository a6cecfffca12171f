"""Reading a tmux pane: what a person at that terminal sees, and waiting until it shows something."""

from __future__ import annotations

import subprocess
import time


def screen(session: str) -> str:
    done = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True)
    return done.stdout


def wait_for(session: str, predicate, timeout: float) -> str:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = screen(session)
        if predicate(text):
            return text
        time.sleep(0.1)
    raise AssertionError(f"screen never matched:\n{screen(session)}")
