"""A stage for the full-disk follow test: it fills the store's disk only once the test says go (a follower has
joined the run's stream by then)."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

from rigcheck.engine.events import Event
from rigcheck.engine.stage import StageContext
from store_fault_stages import fill

GO_WAIT_S = 300.0


def fill_on_go(context: StageContext) -> Iterator[Event]:
    """Wait for the file $GO_PATH, then fill the disk as `fill` does (a figure before, one that meets the full disk)."""
    deadline = time.monotonic() + GO_WAIT_S
    while not os.path.exists(os.environ["GO_PATH"]):
        if time.monotonic() > deadline:
            raise TimeoutError("the test never said go")
        time.sleep(0.05)
    yield from fill(context)
