"""An agent's events on their way to rank 0: held in bursts that share a slot, each burst's write also a beat."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

from rigcheck.engine.events import Event, Progress, RunFinished, StageFinished, Status, Verdict, event_to_dict
from rigcheck.engine.fleet.slots import SealedSlots

PROGRESS_EVERY_S = 0.5  # progress is coalesced: the panels need a few a second, not every step
BURST_WINDOW_S = 0.25  # the longest an event waits for others to share its slot (a stage's events come in bursts)
MAX_BURST_EVENTS = 64  # events in one slot, at most: rank 0 drops a longer burst whole
BURST_BYTES = 256 << 10  # a burst goes once its events' JSON reaches this; an event larger still goes alone
MAX_BURST_BYTES = 1 << 20  # the largest sealed burst of two or more events rank 0 opens (twice BURST_BYTES, escaped)
TAKEN_LIMIT = 1000  # slots in a row found filled by another writer before this agent stops sending


class StoreTampered(Exception):
    """Another writer keeps filling this agent's slots on rank 0's store."""


class BurstSender(SealedSlots):
    """What an agent sends to rank 0 in bursts, and its heartbeat and state (thread-safe)."""

    def __init__(
        self,
        store: Any,
        rank: int,
        world: int,
        key: bytes,
        run_id: str,
        window: float = BURST_WINDOW_S,
        timer: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """`window` 0 sends each event at once; `timer` False leaves sending a held burst on time to the caller
        (flush_due, as the scale bench does for hundreds of agents in one thread)."""
        super().__init__(store, rank, world, key, run_id)
        self.window, self._clock = window, clock
        self._sending = threading.Lock()  # one burst at a time: its events' numbers, its slot, the next slot
        self._held = threading.Condition(self._sending)  # a burst begun: the timer thread wakes to send it on time
        self._pending: list[dict[str, Any]] = []  # the burst being held: {seq, event} each
        self._pending_bytes = 0
        self._held_since = 0.0  # when its first event came
        self._timed = timer and window > 0
        self._timer: threading.Thread | None = None  # started with the first held burst
        self._closed = False
        self._slot = 0  # the next slot to try
        self._sent = 0  # this agent's own count of events sent: each event carries its number
        self._beats = 0
        self._written = float("-inf")  # when the state was last written (clock): a burst's write is a beat too
        self._state = threading.Lock()  # a state's number and its write move together: it only ever rises
        self._arrived: list[str] = []
        self.broken: str | None = None  # why sending to rank 0 stopped
        self._last_progress: dict[tuple[str, str], float] = {}

    def publish(self, event: Event) -> None:
        """Send one event to rank 0 with the burst it falls in: at once if it ends a stage, fails or ends the run,
        else within `window`; once the store has failed (rank 0 gone), the rest stay in this host's store."""
        if self.broken is not None:
            return
        try:
            with self._sending:
                self._hold(event)
        except Exception as error:  # the connection broke: say so once, never stall the local run on it
            self._broke(error)
            raise

    def flush(self) -> None:
        """Send the burst held now, if any (the agent's end, a phase, a close)."""
        if self.broken is not None:
            return
        try:
            with self._sending:
                self._send()
        except Exception as error:
            self._broke(error)
            raise

    def due(self) -> float | None:
        """When the burst held now must go (this channel's clock), or None while none is held."""
        with self._sending:
            return self._held_since + self.window if self._pending else None

    def flush_due(self) -> None:
        """Send the held burst if its window has passed (for a caller that keeps the time itself: timer=False)."""
        when = self.due()
        if when is not None and self._clock() >= when:
            self.flush()

    def close(self) -> None:
        """Send what is held and stop the timer thread; publishing after a close sends each event at once."""
        with self._sending:
            self._closed = True
            self._held.notify_all()
        with suppress(Exception):  # a broken store: `broken` says why, and the caller goes on
            self.flush()

    def _broke(self, error: Exception) -> None:
        self.broken = self.broken or f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"

    def _hold(self, event: Event) -> None:
        """Add `event` to the held burst (its number is its place among every event this agent sends); the burst
        goes now if the event is urgent, the burst full or its window past, else the timer sends it in time."""
        if isinstance(event, Progress) and event.done < event.total:
            key = (event.stage, event.device)
            if event.t - self._last_progress.get(key, 0.0) < PROGRESS_EVERY_S:
                return
            self._last_progress[key] = event.t
        envelope = {"seq": self._sent + len(self._pending), "event": event_to_dict(event)}
        size = len(json.dumps(envelope, default=str, separators=(",", ":")))
        if self._pending and self._pending_bytes + size > BURST_BYTES:
            self._send()  # a large event does not ride in a full burst: it starts the next one
            envelope["seq"] = self._sent
        now = self._clock()
        if not self._pending:
            self._held_since = now
        self._pending.append(envelope)
        self._pending_bytes += size
        full = len(self._pending) >= MAX_BURST_EVENTS or self._pending_bytes >= BURST_BYTES
        if full or _urgent(event) or self._closed or now - self._held_since >= self.window:
            self._send()
        elif self._timed and self._timer is None:
            self._timer = threading.Thread(target=self._time_bursts, name="rigcheck-fleet-bursts", daemon=True)
            self._timer.start()
        elif len(self._pending) == 1:
            self._held.notify_all()  # the timer thread waits for a burst to begin

    def _send(self) -> None:
        """The held burst into the next free slot, then this agent's state (one write each); caller holds _sending."""
        if not self._pending:
            return
        body = {"burst": self._pending}
        for _ in range(TAKEN_LIMIT):
            slot = f"ev/{self.rank}/{self._slot}"
            value = self._seal(slot, body)
            with self._lock:
                now = self.store.compare_set(slot, "", value)
            self._slot += 1
            if (now.decode() if isinstance(now, bytes) else str(now)) == value:
                self._sent += len(self._pending)
                self._pending, self._pending_bytes = [], 0
                self.beat()  # rank 0 learns of the new slot with its next read of every state
                return
        raise StoreTampered(f"{TAKEN_LIMIT} slots in a row were taken by another writer on rank 0's store")

    def _time_bursts(self) -> None:
        """The timer thread: each held burst goes when its window ends, whatever the agent does meanwhile."""
        with self._sending:
            while not self._closed and self.broken is None:
                if not self._pending:
                    self._held.wait()
                    continue
                left = self._held_since + self.window - self._clock()
                if left > 0:
                    self._held.wait(left)
                    continue
                try:
                    self._send()
                except Exception as error:  # as publish does: the rest stay in this host's store
                    self._broke(error)

    def beat(self, ended: bool = False) -> None:
        """This agent's heartbeat and state: a rising number, the slots it has used, the phases it reached."""
        with self._state:
            self._beats += 1
            state = {"beat": self._beats, "slots": self._slot, "arrived": list(self._arrived)}
            self.put(f"hb/{self.rank}", {**state, "ended": True} if ended else state)
            self._written = self._clock()

    def beat_if_quiet(self, interval: float) -> float:
        """A heartbeat unless the state was written within `interval` (a burst's write is one); the seconds
        until the next one is due."""
        quiet = self._clock() - self._written
        if quiet < interval:
            return interval - quiet
        self.beat()
        return interval


def _urgent(event: Event) -> bool:
    """Events rank 0 must see without delay: a stage's end, a failure (FAIL, TIMEOUT, CRASH), the agent's own
    run's end."""
    if isinstance(event, (StageFinished, RunFinished)):
        return True
    return isinstance(event, Verdict) and event.status.severity >= Status.FAIL.severity
