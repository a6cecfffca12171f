"""Finds a run that another process started (a second app, `run --detach`) while this app follows none.

An app opens on the run in progress, but one started after it opened went unseen: the app said "idle"
beside a live run. A thread of its own asks the store once a second (the app's thread never reads the
store on a timer) and posts what it finds; the app attaches to it as it does at start.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.store import Store
from rigcheck.tui.run_link import RunLink
from textual.message import Message

WATCH_S = 1.0


@dataclass
class LiveRunFound(Message):
    """A run an engine carries now, that this app has not followed yet."""

    run: dict[str, Any]


class LiveWatch:
    def __init__(self, store: Store, post: Callable[[Message], object], interval: float = WATCH_S) -> None:
        self.store = store
        self.post = post
        self.interval = interval
        self.known: set[int] = set()  # runs already followed or already told about
        self.following = threading.Event()  # set while the app follows a run: nothing to look for then
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="rigcheck-live-watch", daemon=True)

    def start(self) -> LiveWatch:
        self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(self.interval):
            if self.following.is_set():
                continue
            try:
                run = RunLink.live_run(self.store)
            except Exception:  # a store that cannot be read now: the next look may do better
                continue
            if run is not None and run["id"] not in self.known:
                self.known.add(run["id"])
                self.post(LiveRunFound(run))

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(1.0)
