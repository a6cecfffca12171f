"""The fleet's one channel: torch.distributed's c10d store (torchrun's own), keyed per agent.

Each agent writes its events as JSON under `ev/<rank>/<n>` and then counts them up under `evn/<rank>`, so rank 0
never reads an event before it is whole; a heartbeat counter, its announcement, phase arrivals and its end
live beside them. JSON only: nothing read from the store is ever unpickled.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from rigcheck.engine.events import Event, Progress, event_to_dict

PROGRESS_EVERY_S = 0.5  # progress is coalesced: the panels need a few a second, not every step
GIVE_UP_AFTER = 5  # heartbeats that failed in a row before the store is taken to be gone


class FleetChannel:
    """One agent's view of the store (thread-safe): what it writes, and what rank 0 reads of every agent."""

    def __init__(self, store: Any, rank: int, world: int) -> None:
        self.store, self.rank, self.world = store, rank, world
        self._lock = threading.Lock()  # one store call at a time
        self._sending = threading.Lock()  # one event at a time
        self._sent = 0
        self.broken: str | None = None  # why sending to rank 0 stopped
        self._last_progress: dict[tuple[str, str], float] = {}

    def _set(self, key: str, value: Any) -> None:
        with self._lock:
            self.store.set(key, json.dumps(value, default=str))

    def _get(self, key: str) -> Any | None:
        with self._lock:
            if not self.store.check([key]):
                return None
            return json.loads(self.store.get(key))

    def _count(self, key: str, add: int = 0) -> int:
        with self._lock:
            return int(self.store.add(key, add))

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
        with self._sending:  # the event's number, its key and the count move together
            if isinstance(event, Progress) and event.done < event.total:
                key = (event.stage, event.device)
                if event.t - self._last_progress.get(key, 0.0) < PROGRESS_EVERY_S:
                    return
                self._last_progress[key] = event.t
            self._set(f"ev/{self.rank}/{self._sent}", event_to_dict(event))
            self._sent += 1
            self._count(f"evn/{self.rank}", 1)

    def beat(self) -> None:
        self._count(f"hb/{self.rank}", 1)

    def arrive(self, phase: str) -> None:
        self._set(f"arrive/{phase}/{self.rank}", time.time())

    def finish(self, summary: dict[str, Any]) -> None:
        """The last thing an agent writes: every event it sent is readable before this."""
        self._set(f"done/{self.rank}", summary)

    def members(self, phase: str) -> list[int] | None:
        """The ranks rank 0 admitted to a phase, once it has decided."""
        return self._get(f"members/{phase}")

    # -- what rank 0 reads --
    def host(self, rank: int) -> dict[str, Any] | None:
        return self._get(f"host/{rank}")

    def beats(self, rank: int) -> int:
        return self._count(f"hb/{rank}")

    def events(self, rank: int, since: int) -> list[dict[str, Any]]:
        """Rank `rank`'s events from number `since` on."""
        total = self._count(f"evn/{rank}")
        found = []
        for n in range(since, total):
            data = self._get(f"ev/{rank}/{n}")
            if data is not None:
                found.append(data)
        return found

    def arrived(self, phase: str, rank: int) -> bool:
        return self._get(f"arrive/{phase}/{rank}") is not None

    def set_members(self, phase: str, ranks: list[int]) -> None:
        self._set(f"members/{phase}", ranks)

    def done(self, rank: int) -> dict[str, Any] | None:
        return self._get(f"done/{rank}")


class Heartbeat:
    """Counts up this agent's heartbeat every `interval` seconds while the agent lives."""

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
