"""Waiting for a child started ahead: READY ends the wait, a stop ends it at once, a dead child is not ready."""

from __future__ import annotations

import subprocess
import sys
import time
from multiprocessing import Pipe

from rigcheck.engine.run.order import READY
from rigcheck.engine.run.warm_pool import WarmChild


def child(sleep_s: float = 60.0) -> tuple[WarmChild, object]:
    proc = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({sleep_s})"])
    events_read, events_write = Pipe(duplex=False)
    _orders_read, orders_write = Pipe(duplex=False)
    return WarmChild(proc, orders_write, events_read, ready=False), events_write


def test_ready_ends_the_wait() -> None:
    waiting, say = child()
    try:
        say.send_bytes(READY)  # type: ignore[attr-defined]
        assert waiting.wait_ready(30.0) and waiting.ready
    finally:
        waiting.proc.kill()
        waiting.proc.wait()


def test_a_stop_ends_the_wait_without_ready() -> None:
    waiting, _say = child()
    try:
        started = time.monotonic()
        assert not waiting.wait_ready(60.0, stop=lambda: time.monotonic() - started > 0.5)
        assert time.monotonic() - started < 30.0 and not waiting.ready  # the stop, not the 60 s, ended it
    finally:
        waiting.proc.kill()
        waiting.proc.wait()


def test_a_child_that_died_is_not_ready_even_with_ready_on_its_pipe() -> None:
    waiting, say = child(0.0)
    waiting.proc.wait()
    say.send_bytes(READY)  # type: ignore[attr-defined]
    assert not waiting.wait_ready(5.0)
