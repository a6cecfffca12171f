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

import time
from typing import Any

from rigcheck.engine.fleet.bursts import (
    BURST_BYTES,
    BURST_WINDOW_S,
    MAX_BURST_BYTES,
    MAX_BURST_EVENTS,
    PROGRESS_EVERY_S,
    TAKEN_LIMIT,
    BurstSender,
    StoreTampered,
)
from rigcheck.engine.fleet.slots import Read


class FleetChannel(BurstSender):
    """One agent's view of the store (thread-safe): what it writes, and what rank 0 reads of every agent."""

    # -- what an agent writes --
    def announce(self, info: dict[str, Any]) -> None:
        self.put(f"host/{self.rank}", info)

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


# kept here too: the agent, the collector and the tests import them from the channel
from rigcheck.engine.fleet.heartbeat import GIVE_UP_AFTER, Heartbeat, heartbeat_interval  # noqa: E402

__all__ = [
    "BURST_BYTES",
    "BURST_WINDOW_S",
    "GIVE_UP_AFTER",
    "MAX_BURST_BYTES",
    "MAX_BURST_EVENTS",
    "PROGRESS_EVERY_S",
    "TAKEN_LIMIT",
    "FleetChannel",
    "Heartbeat",
    "Read",
    "StoreTampered",
    "heartbeat_interval",
    "refusal_nonce",
]
