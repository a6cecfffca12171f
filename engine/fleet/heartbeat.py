"""An agent's heartbeat on the fleet's store: a sealed, rising number (its state, engine/fleet/channel.py) raised
every few seconds while the agent lives; rank 0 calls an agent lost when it stops rising for --lost-after."""

from __future__ import annotations

import threading
from typing import Any, Protocol


class Beating(Protocol):
    """What a heartbeat needs of the agent's channel (engine/fleet/channel.py's FleetChannel)."""

    broken: Any

    def beat_if_quiet(self, interval: float) -> float: ...


GIVE_UP_AFTER = 5  # heartbeats that failed in a row before the store is taken to be gone


def heartbeat_interval(lost_after: float) -> float:
    """A beat a second, or one every tenth of --lost-after past 10 s (3 s at the default 30 s): a thousand
    agents beating every second are a thousand writes a second to one store, for no earlier a loss."""
    return min(5.0, max(1.0, lost_after / 10))


class Heartbeat:
    """Raises this agent's sealed heartbeat every `interval` seconds while the agent lives."""

    def __init__(self, channel: Beating, interval: float = 1.0) -> None:
        self.channel, self.interval = channel, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rigcheck-fleet-heartbeat", daemon=True)

    def _loop(self) -> None:
        failures = 0
        while not self._stop.is_set() and self.channel.broken is None:
            wait = self.interval
            try:
                wait = self.channel.beat_if_quiet(self.interval)  # a burst's state written lately is a beat
                failures = 0
            except Exception:  # a slow answer is retried; a store gone for good (rank 0 ended) ends the beat
                failures += 1
                if failures >= GIVE_UP_AFTER:
                    return
            self._stop.wait(wait)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
