"""Stages for store-fault tests: one that fills the store's disk, one that leaves a half-written shared file,
one that measures steadily for a while."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator

from rigcheck.engine.events import Event, LogLine, Measurement, Progress, Status, Verdict
from rigcheck.engine.stage import StageContext


def fill(context: StageContext) -> Iterator[Event]:
    """A figure, then the disk at $FILL_PATH filled to the last byte, then a figure that meets the full disk."""
    stage, device = context.spec.stage, context.spec.device
    yield Measurement(stage, "before", 1.0, "units", device=device)
    _wait_until_stored("before")  # the disk fills once the parent has stored the first figure
    fd = os.open(os.environ["FILL_PATH"], os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"x" * 4096)
    except OSError:
        pass  # ENOSPC: the disk is full now
    finally:
        os.close(fd)
    yield Measurement(stage, "after", 2.0, "units", device=device)
    yield Verdict(stage, "fill", Status.PASS, "filled the disk")


def _wait_until_stored(name: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.closing(sqlite3.connect(os.environ["RIGCHECK_STORE"], timeout=30)) as db:
            if db.execute("SELECT 1 FROM measurements WHERE name = ?", (name,)).fetchone():
                return
        time.sleep(0.05)
    raise TimeoutError(f"figure {name!r} never reached the store")


def leaves_partial(context: StageContext) -> Iterator[Event]:
    """Dies half-way through writing a shared result, as a child killed mid-write does."""
    folder = os.environ["RIGCHECK_SHARED_DIR"]
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"ref.pt.{os.getpid()}.partial"), "wb") as partial:
        partial.write(b"half" * 1000)
    yield Progress(context.spec.stage, 1, 2, "writing")
    os._exit(9)


def steady(context: StageContext) -> Iterator[Event]:
    """A figure and some chatter every 0.3 s, `steps` times."""
    stage = context.spec.stage
    for step in range(int(context.spec.option("steps", 10))):
        time.sleep(0.3)
        for n in range(int(context.spec.option("chatter", 1))):
            yield LogLine(stage, f"step {step} line {n}")
        yield Measurement(stage, f"step {step}", float(step), "steps", device=context.spec.device)
    yield Verdict(stage, "steady", Status.PASS, "measured every step")
