"""The fleet's one channel: torch.distributed's c10d store (torchrun's own), keyed per agent.

torchrun's store listens on every interface, and anyone who reaches it may read and write any key. So every
value an agent puts there is sealed with the fleet key (engine/fleet/seal.py), and rank 0 opens and checks
each one (engine/fleet/schema.py) before it counts: what fails is dropped and counted, never stored.

Each agent writes its events under `ev/<rank>/<slot>`, one slot each, taking a slot only while it is empty
(compare_set): a slot someone else filled first is passed over, not overwritten. Rank 0 reads the slots in
order, a bounded number per poll. Each event carries the agent's own sequence number, so an event someone
overwrote is counted as lost. A heartbeat (a sealed, rising number), its announcement, phase arrivals, a
refusal and its end live beside them. JSON only: nothing read from the store is ever unpickled.

At a thousand hosts rank 0 cannot look at every agent's keys every poll, so the heartbeat is also the agent's
state: the slots it has filled and the phases it has reached, sealed like the rest. Rank 0 reads every
agent's state with one multi_get and only then the slots that are new; the slots themselves are still what
counts (a state says where to look, never what was sent), and a slow scan finds what no state announced.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Event, Progress, event_to_dict
from rigcheck.engine.fleet.seal import Unsealed, seal, unseal

PROGRESS_EVERY_S = 0.5  # progress is coalesced: the panels need a few a second, not every step
GIVE_UP_AFTER = 5  # heartbeats that failed in a row before the store is taken to be gone
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

    def __init__(self, store: Any, rank: int, world: int, key: bytes, run_id: str) -> None:
        self.store, self.rank, self.world = store, rank, world
        self.key, self.run_id = key, run_id
        self._lock = threading.Lock()  # one store call at a time
        self._sending = threading.Lock()  # one event at a time
        self._slot = 0  # the next slot to try
        self._sent = 0  # this agent's own count of events sent: each event carries its number
        self._beats = 0
        self._state = threading.Lock()  # a state's number and its write move together: it only ever rises
        self._arrived: list[str] = []
        self.broken: str | None = None  # why sending to rank 0 stopped
        self._last_progress: dict[tuple[str, str], float] = {}

    def _seal(self, key: str, body: Any) -> str:
        return seal(self.key, self.run_id, key, body)

    def _set(self, key: str, body: Any) -> None:
        value = self._seal(key, body)
        with self._lock:
            self.store.set(key, value)

    def read(self, key: str) -> Read:
        """One slot, opened: missing, or its seal and form checked."""
        with self._lock:
            if not self.store.check([key]):
                return Read("missing")
            raw = self.store.get(key)
        return self._open(key, raw)

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

    def _open(self, key: str, raw: Any) -> Read:
        raw = raw if isinstance(raw, bytes) else str(raw).encode()
        try:
            return Read("ok", unseal(self.key, self.run_id, key, raw).body, raw=raw)
        except Unsealed as why:
            return Read(why.reason, detail=why.detail, raw=raw)

    # -- what an agent writes --
    def announce(self, info: dict[str, Any]) -> None:
        self._set(f"host/{self.rank}", info)

    def publish(self, event: Event) -> None:
        """Send one event to rank 0; once the store has failed (rank 0 gone), the rest stay in this host's store."""
        if self.broken is not None:
            return
        try:
            self._publish(event)
        except Exception as error:  # the connection broke: say so once, never stall the local run on it
            self.broken = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            raise

    def _publish(self, event: Event) -> None:
        with self._sending:  # the event's number, its slot and the next slot move together
            if isinstance(event, Progress) and event.done < event.total:
                key = (event.stage, event.device)
                if event.t - self._last_progress.get(key, 0.0) < PROGRESS_EVERY_S:
                    return
                self._last_progress[key] = event.t
            body = {"seq": self._sent, "event": event_to_dict(event)}
            for _ in range(TAKEN_LIMIT):
                slot = f"ev/{self.rank}/{self._slot}"
                value = self._seal(slot, body)
                with self._lock:
                    now = self.store.compare_set(slot, "", value)
                self._slot += 1
                if (now.decode() if isinstance(now, bytes) else str(now)) == value:
                    self._sent += 1
                    self.beat()  # rank 0 learns of the new slot with its next read of every state
                    return
            raise StoreTampered(f"{TAKEN_LIMIT} slots in a row were taken by another writer on rank 0's store")

    def beat(self, ended: bool = False) -> None:
        """This agent's heartbeat and state: a rising number, the slots it has used, the phases it reached."""
        with self._state:
            self._beats += 1
            state = {"beat": self._beats, "slots": self._slot, "arrived": list(self._arrived)}
            self._set(f"hb/{self.rank}", {**state, "ended": True} if ended else state)

    def arrive(self, phase: str) -> None:
        self._set(f"arrive/{phase}/{self.rank}", {"t": time.time()})
        self._arrived.append(phase)
        self.beat()

    def refuse(self, why: str, name: str) -> None:
        """This agent will not run (bad input, a busy store): rank 0 quotes why instead of waiting for it."""
        self._set(f"refused/{self.rank}", {"why": why, "name": name})

    def finish(self, summary: dict[str, Any]) -> None:
        """The last thing an agent writes: every event it sent is readable before this, in `slots` slots."""
        with self._sending:
            self._set(f"done/{self.rank}", {**summary, "slots": self._slot, "sent": self._sent})
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
        found = self._get(f"refused/{rank}")
        return str(found.get("why"))[:2000] if isinstance(found, dict) else None

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
        self._set(f"members/{phase}", ranks)


def heartbeat_interval(lost_after: float) -> float:
    """A beat a second, or one every tenth of --lost-after past 10 s (3 s at the default 30 s): a thousand
    agents beating every second are a thousand writes a second to one store, for no earlier a loss."""
    return min(5.0, max(1.0, lost_after / 10))


class Heartbeat:
    """Raises this agent's sealed heartbeat every `interval` seconds while the agent lives."""

    def __init__(self, channel: FleetChannel, interval: float = 1.0) -> None:
        self.channel, self.interval = channel, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rigcheck-fleet-heartbeat", daemon=True)

    def _loop(self) -> None:
        failures = 0
        while not self._stop.is_set() and self.channel.broken is None:
            try:
                self.channel.beat()
                failures = 0
            except Exception:  # a slow answer is retried; a store gone for good (rank 0 ended) ends the beat
                failures += 1
                if failures >= GIVE_UP_AFTER:
                    return
            self._stop.wait(self.interval)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
