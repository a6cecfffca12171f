"""A run's writes that outlast a locked store: held in memory, in order, and written once the lock is released.

Another process may hold the store for minutes (a `sqlite3` shell in a transaction, a backup). The run goes on:
its events wait here, bounded, and a thread writes them as soon as it can. Progress, log lines and telemetry
beyond the bound are dropped and counted; figures, verdicts, facts and a stage's start and end never are. A
full disk is no lock: the run is told (it stops), and its reserve is given back so the write that failed, the
run's last events and its end still land.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Event, LogLine, Progress
from rigcheck.engine.store.errors import is_full, is_locked
from rigcheck.engine.store.reserve import SpaceReserve

QUICK_WAIT_S = 0.5  # how long one write waits for another process's lock before its event is held
RETRY_S = 0.25  # between tries while the store stays locked
HELD_SAMPLES = 3600  # an hour of stored telemetry (one sample a second)
HELD_CHATTER = 5000  # progress events and log lines


@dataclass(frozen=True)
class _Write:
    kind: str  # "samples" (telemetry) or "events"
    event: Event | None = None
    sample: tuple[float, dict[str, Any]] | None = None

    @property
    def droppable(self) -> bool:
        """Telemetry, progress and ordinary log lines: worth keeping, but not at any cost in memory."""
        if self.event is None:
            return True
        return isinstance(self.event, Progress) or (isinstance(self.event, LogLine) and self.event.level != "error")


class HeldWrites:
    """Writes run `run_id`'s events and samples now, or holds them while the store is locked."""

    def __init__(
        self,
        store: Any,
        run_id: int,
        reserve: SpaceReserve | None = None,
        on_failure: Callable[[BaseException], None] = lambda error: None,
        say: Callable[[str], None] = lambda line: None,
        bounds: dict[str, int] | None = None,
    ) -> None:
        self.store = store
        self.run_id = run_id
        self.reserve = reserve
        self.on_failure = on_failure  # a write the store refused for good (full disk, read-only, damaged)
        self.say = say
        self.bounds = bounds or {"samples": HELD_SAMPLES, "events": HELD_CHATTER}
        self.dropped: Counter[str] = Counter()  # beyond the bound while locked, by kind
        self.lost: Counter[str] = Counter()  # refused for good, by kind
        self.locked_s = 0.0  # time spent waiting for another process's lock, all episodes together
        self.most_held = 0
        self._items: deque[_Write] = deque()
        self._droppable_held: Counter[str] = Counter()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._locked_since: float | None = None
        self._closed = False

    # -- from the run's threads --
    def event(self, event: Event) -> None:
        self._put(_Write("events", event=event))

    def sample(self, t: float, data: dict[str, Any]) -> None:
        self._put(_Write("samples", sample=(t, data)))

    @property
    def held(self) -> int:
        with self._cond:
            return len(self._items)

    def locked_for(self) -> float:
        """Seconds spent waiting for another process's lock so far, the wait going on now included."""
        with self._cond:
            now = 0.0 if self._locked_since is None else time.monotonic() - self._locked_since
            return self.locked_s + now

    def drained(self, timeout: float | None = None) -> bool:
        """Wait until every held write is written (or refused for good); False if some remain after `timeout`."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._items, timeout)

    def close(self) -> int:
        """Stop holding: what is still held is lost (counted, and returned); the reserve goes back to the disk."""
        with self._cond:
            self._closed = True
            left = len(self._items)
            for item in self._items:
                self.lost[item.kind] += 1
            self._items.clear()
            self._cond.notify_all()
        if self.reserve is not None:
            self.reserve.release()
        return left

    # -- holding --
    def _put(self, item: _Write) -> None:
        with self._cond:
            if self._closed:
                self.lost[item.kind] += 1
                return
            if self._items:  # a lock is being waited out: behind the others, in order
                self._hold(item)
                return
        if self._try(item):
            return
        with self._cond:
            self._hold(item)

    def _hold(self, item: _Write) -> None:
        """Called with the condition held."""
        if item.droppable:
            if self._droppable_held[item.kind] >= self.bounds[item.kind]:
                self.dropped[item.kind] += 1
                return
            self._droppable_held[item.kind] += 1
        self._items.append(item)
        self.most_held = max(self.most_held, len(self._items))
        if self._thread is None:
            self._thread = threading.Thread(target=self._drain, name="rigcheck-held-writes", daemon=True)
            self._thread.start()

    def _drain(self) -> None:
        while True:
            with self._cond:
                if not self._items or self._closed:
                    self._thread = None
                    self._cond.notify_all()
                    return
                item = self._items[0]
            if not self._try(item):
                time.sleep(RETRY_S)
                continue
            with self._cond:
                if self._items and self._items[0] is item:
                    self._items.popleft()
                    if item.droppable:
                        self._droppable_held[item.kind] -= 1
                if not self._items:
                    self._cond.notify_all()

    # -- writing --
    def _try(self, item: _Write) -> bool:
        """Write one item: True when done with it (written, or refused for good), False while the store is locked."""
        try:
            self._write(item)
        except (sqlite3.Error, OSError) as error:
            if is_locked(error):
                self._now_locked()
                return False
            self.on_failure(error)  # the run stops: the room left is for what it has, not for more
            if is_full(error) and self.reserve is not None and self.reserve.release():
                return self._try(item)  # the write that met the full disk, into the room given back
            self.lost[item.kind] += 1
            return True
        self._now_free()
        return True

    def _write(self, item: _Write) -> None:
        with self.store.patience(QUICK_WAIT_S):
            if item.event is not None:
                self.store.record(self.run_id, item.event)
            elif item.sample is not None:
                self.store.record_sample(self.run_id, *item.sample)

    def _now_locked(self) -> None:
        with self._cond:  # the run's thread and the writing thread both get here
            if self._locked_since is not None:
                return
            self._locked_since = time.monotonic() - QUICK_WAIT_S
        self.say(
            f"the store {self.store.path} is locked by another process: this run goes on, "
            "holding its results in memory until the lock is released"
        )

    def _now_free(self) -> None:
        with self._cond:
            if self._locked_since is None:
                return
            waited = time.monotonic() - self._locked_since
            self.locked_s += waited
            self._locked_since = None
        self.say(f"the store is free again after {waited:.0f} s; the results held meanwhile are being written")
