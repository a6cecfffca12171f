"""The fleet's one channel: torch.distributed's c10d store (torchrun's own), keyed per agent.

torchrun's store listens on every interface, and anyone who reaches it may read and write any key. So every
value an agent puts there is sealed with the fleet key (engine/fleet/seal.py), and rank 0 opens and checks
each one (engine/fleet/schema.py) before it counts: what fails is dropped and counted, never stored.

Each agent writes its events under `ev/<rank>/<slot>`, a burst of them a slot, taking a slot only while it is
empty (compare_set): a slot someone else filled first is passed over, not overwritten. An event waits at most
BURST_WINDOW_S for others to share its slot (a stage's end, a failure and the agent's end go at once), and a
burst's state write is also a heartbeat: a recorded agent's run makes 2.5 times fewer writes than at one event
a slot, which is what a thousand agents on one store need. Rank 0 reads the slots in
order, a bounded number per poll. Each event carries the agent's own sequence number, so an event someone
overwrote is counted as lost. A heartbeat (a sealed, rising number), its announcement, phase arrivals, a
refusal and its end live beside them. JSON only: nothing read from the store is ever unpickled.

At a thousand hosts rank 0 cannot look at every agent's keys every poll, so the heartbeat is also the agent's
state: the slots it has filled and the phases it has reached, sealed like the rest. Rank 0 reads every
agent's state with one multi_get and only then the slots that are new; the slots themselves are still what
counts (a state says where to look, never what was sent), and a slow scan finds what no state announced.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Event, Progress, RunFinished, StageFinished, Status, Verdict, event_to_dict
from rigcheck.engine.fleet.seal import BOOTSTRAP, Unsealed, seal, unseal

PROGRESS_EVERY_S = 0.5  # progress is coalesced: the panels need a few a second, not every step
BURST_WINDOW_S = 0.25  # the longest an event waits for others to share its slot (a stage's events come in bursts)
MAX_BURST_EVENTS = 64  # events in one slot, at most: rank 0 drops a longer burst whole
BURST_BYTES = 256 << 10  # a burst goes once its events' JSON reaches this; an event larger still goes alone
MAX_BURST_BYTES = 1 << 20  # the largest sealed burst of two or more events rank 0 opens (twice BURST_BYTES, escaped)
TAKEN_LIMIT = 1000  # slots in a row found filled by another writer before this agent stops sending


class StoreTampered(Exception):
    """Another writer keeps filling this agent's slots on rank 0's store."""


@dataclass(frozen=True)
class Read:
    """What one slot held: its body once it passed (`state` ok), or why not (missing, forged, unreadable)."""

    state: str
    body: Any = None
    detail: str = ""
    raw: bytes = b""


class FleetChannel:
    """One agent's view of the store (thread-safe): what it writes, and what rank 0 reads of every agent."""

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
        self.store, self.rank, self.world = store, rank, world
        self.key, self.run_id = key, run_id
        self.nonce = BOOTSTRAP  # rank 0's for this run: rank 0 makes it, every other agent asks for it (join)
        self.window, self._clock = window, clock
        self._lock = threading.Lock()  # one store call at a time
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

    def _seal(self, key: str, body: Any, nonce: str | None = None) -> str:
        return seal(self.key, self.run_id, key, body, self.nonce if nonce is None else nonce)

    def put(self, key: str, body: Any, nonce: str | None = None) -> None:
        value = self._seal(key, body, nonce)
        with self._lock:
            self.store.set(key, value)

    def read(self, key: str, nonce: str | None = None) -> Read:
        """One slot, opened: missing, or its seal (for this run's nonce, or `nonce`) and form checked."""
        with self._lock:
            if not self.store.check([key]):
                return Read("missing")
            raw = self.store.get(key)
        return self._open(key, raw, nonce)

    def _get(self, key: str) -> Any | None:
        """A slot's body if it passed; None for a missing one or one that did not (the reader waits on)."""
        found = self.read(key)
        return found.body if found.state == "ok" else None

    def exists(self, key: str) -> bool:
        with self._lock:
            return bool(self.store.check([key]))

    def read_many(self, keys: list[str]) -> list[Read]:
        """Many slots in two round trips when they all exist (check, then multi_get), one by one when not:
        multi_get waits for a missing key rather than say so."""
        if not keys:
            return []
        with self._lock:
            whole = bool(self.store.check(keys))
            raws = list(self.store.multi_get(keys)) if whole else []
        if not whole:
            return [self.read(key) for key in keys]
        return [self._open(key, raw) for key, raw in zip(keys, raws, strict=True)]

    def _open(self, key: str, raw: Any, nonce: str | None = None) -> Read:
        raw = raw if isinstance(raw, bytes) else str(raw).encode()
        try:
            return Read(
                "ok", unseal(self.key, self.run_id, key, raw, self.nonce if nonce is None else nonce).body, raw=raw
            )
        except Unsealed as why:
            return Read(why.reason, detail=why.detail, raw=raw)

    # -- what an agent writes --
    def announce(self, info: dict[str, Any]) -> None:
        self.put(f"host/{self.rank}", info)

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

    def arrive(self, phase: str) -> None:
        self.flush()  # what this agent sent before the phase is readable before its arrival
        self.put(f"arrive/{phase}/{self.rank}", {"t": time.time()})
        self._arrived.append(phase)
        self.beat()

    def refuse(self, why: str, name: str) -> None:
        """This agent will not run (bad input, a busy store): rank 0 quotes why instead of waiting for it."""
        self.put(f"refused/{self.rank}", {"why": why, "name": name}, refusal_nonce(self.rank, self.nonce))

    def finish(self, summary: dict[str, Any]) -> None:
        """The last thing an agent writes: every event it sent is readable before this, in `slots` slots."""
        with self._sending:
            self._send()  # nothing held is lost: the end counts it
            self._closed = True  # the timer thread ends; anything published later goes at once
            self._held.notify_all()
            self.put(f"done/{self.rank}", {**summary, "slots": self._slot, "sent": self._sent})
            self.beat(ended=True)

    def members(self, phase: str) -> list[int] | None:
        """The ranks rank 0 admitted to a phase, once it has decided (a value failing its seal is no decision)."""
        from rigcheck.engine.fleet.schema import Malformed, ranks

        found = self._get(f"members/{phase}")
        try:
            return None if found is None else ranks(found, self.world)
        except Malformed:
            return None

    def refused(self, rank: int) -> str | None:
        found = self.read(f"refused/{rank}", refusal_nonce(rank, self.nonce))
        return str(found.body.get("why"))[:2000] if found.state == "ok" and isinstance(found.body, dict) else None

    # -- what rank 0 reads --
    def host(self, rank: int) -> dict[str, Any] | None:
        """Rank `rank`'s announcement, checked; None while there is none that passes."""
        from rigcheck.engine.fleet.schema import Malformed, announcement

        found = self._get(f"host/{rank}")
        try:
            return None if found is None else announcement(found)
        except Malformed:
            return None

    def set_members(self, phase: str, ranks: list[int]) -> None:
        self.put(f"members/{phase}", ranks)


def refusal_nonce(rank: int, nonce: str) -> str:
    """Every refusal, rank 0's too, is sealed with the run's nonce: one recorded in another run never counts here.
    (Agents still waiting for the nonce learn of rank 0's refusal in answer to their own challenge: handshake.py.)"""
    return nonce


def _urgent(event: Event) -> bool:
    """Events rank 0 must see without delay: a stage's end, a failure (FAIL, TIMEOUT, CRASH), the agent's own
    run's end."""
    if isinstance(event, (StageFinished, RunFinished)):
        return True
    return isinstance(event, Verdict) and event.status.severity >= Status.FAIL.severity


# kept here too: the agent, the collector and the tests import them from the channel
from rigcheck.engine.fleet.heartbeat import GIVE_UP_AFTER, Heartbeat, heartbeat_interval  # noqa: E402

__all__ = ["GIVE_UP_AFTER", "FleetChannel", "Heartbeat", "Read", "StoreTampered", "heartbeat_interval", "refusal_nonce"]
