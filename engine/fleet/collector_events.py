"""Rank 0 reads each agent's event slots in order, bounded per poll, each event checked before it is written."""

from __future__ import annotations

import time
from typing import Any

from rigcheck.engine.fleet import schema
from rigcheck.engine.fleet.bursts import MAX_BURST_BYTES, MAX_BURST_EVENTS
from rigcheck.engine.fleet.collector_decide import Decisions
from rigcheck.engine.fleet.collector_limits import (
    KEYS_PER_CALL,
    LOOKAHEAD,
    LOOKAHEAD_EVERY_S,
    MAX_SLOTS,
    READS_PER_POLL,
    ROWS_PER_WRITE,
    SLOTS_PER_POLL,
)
from rigcheck.engine.fleet.hosts import HostState, describe
from rigcheck.engine.fleet.intake import Dropped
from rigcheck.engine.fleet.slots import Read


class EventReads(Decisions):
    """The slots each agent's state announced, read together; a gap, or none announced, looked at one by one."""

    def _prefetch(self) -> dict[str, Read]:
        """The slots every running agent's state announced and rank 0 has not read, KEYS_PER_CALL a call:
        a thousand agents' news in a few round trips, rather than two for each agent."""
        keys: list[str] = []
        for host in self.hosts:
            if host.state == "running" and host.final is None and host.known > host.slot:
                end = min(host.known, host.slot + READS_PER_POLL)
                keys += [f"ev/{host.rank}/{n}" for n in range(host.slot, end)]
                if len(keys) >= SLOTS_PER_POLL:
                    break
        ready: dict[str, Read] = {}
        for start in range(0, len(keys), KEYS_PER_CALL):
            chunk = keys[start : start + KEYS_PER_CALL]
            ready.update(zip(chunk, self.channel.read_many(chunk), strict=True))
        return ready

    def _read_events(self, host: HostState, ready: dict[str, Read] | None = None) -> bool:
        """Read the host's next events, at most READS_PER_POLL; True once it has caught up with every slot.
        The slots its state or its end announced are read together; a gap, or none announced, one by one."""
        target = host.final if host.final is not None else host.known
        if host.slot < target:
            keys = [f"ev/{host.rank}/{n}" for n in range(host.slot, min(target, host.slot + READS_PER_POLL))]
            ready = ready or {}
            unread = [key for key in keys if key not in ready]
            fetched = dict(zip(unread, self.channel.read_many(unread), strict=True)) if unread else {}
            for slot in keys:
                found = ready.get(slot) or fetched[slot]
                if found.state == "missing":
                    return self._read_slots(host)  # a gap (deleted, or not yet there): looked past at its pace
                host.slot += 1
                if found.state != "ok":
                    self._drop(host.rank, slot, found)
                    continue
                self._take(host, slot, found)
            if host.slot < target:
                return False
        return self._read_slots(host)

    def _read_slots(self, host: HostState) -> bool:
        """The host's next slots one by one while they exist, at most READS_PER_POLL."""
        for _ in range(READS_PER_POLL):
            if host.final is not None and host.slot >= host.final:
                if host.sent > host.seq:  # events it sent that never reached rank 0 whole
                    self.dropped.setdefault(host.rank, Dropped()).overwritten += host.sent - host.seq
                    host.seq = host.sent
                return True
            if host.final is None and host.slot >= host.known and not host.scanning:
                # nothing announced past it: no round trip to look (a thousand hosts with news a poll would
                # each cost one, and a slower poll has more hosts with news); a scan looks
                return True
            slot = f"ev/{host.rank}/{host.slot}"
            found = self.channel.read(slot)
            if found.state == "missing":
                if host.final is not None:  # below its last slot: deleted by someone
                    self._tampered(host, f"its event slot {slot} vanished before rank 0 read it")
                    host.slot += 1
                    continue
                if host.slot >= host.known and not host.scanning:
                    return True  # none announced past it: the agent has not written it yet (a scan looks)
                if time.monotonic() - host.looked_ahead < LOOKAHEAD_EVERY_S:
                    return True
                host.looked_ahead = time.monotonic()
                ahead = next(
                    (
                        n
                        for n in range(host.slot + 1, host.slot + 1 + LOOKAHEAD)
                        if self.channel.exists(f"ev/{host.rank}/{n}")
                    ),
                    None,
                )
                if ahead is None:
                    return True  # the agent has not written it yet
                if self.channel.exists(slot):
                    continue  # written meanwhile: the agent fills its slots in order, so no gap after all
                self._tampered(
                    host, f"its event slot {slot} was empty while ev/{host.rank}/{ahead} after it was filled"
                )
                host.slot = ahead
                continue
            host.slot += 1
            if found.state != "ok":
                self._drop(host.rank, slot, found)
                continue
            self._take(host, slot, found)
        return False

    def _take(self, host: HostState, slot: str, found: Read) -> None:
        """A slot's events in order: a burst {burst: [{seq, event}, ...]} of at most MAX_BURST_EVENTS and
        MAX_BURST_BYTES, or one {seq, event}; each event is checked on its own, and a bad one is counted alone."""
        body = found.body
        if not (isinstance(body, dict) and set(body) == {"burst"}):
            self._take_one(host, slot, body)
            return
        burst = body["burst"]
        if not isinstance(burst, list) or not 1 <= len(burst) <= MAX_BURST_EVENTS:
            self._drop(host.rank, slot, why=f"a burst is a list of 1 to {MAX_BURST_EVENTS} events")
            return
        if len(burst) > 1 and len(found.raw) > MAX_BURST_BYTES:
            self._drop(host.rank, slot, why=f"a burst of {len(found.raw)} bytes, above {MAX_BURST_BYTES}")
            return
        for n, item in enumerate(burst):
            self._take_one(host, f"{slot}#{n}", item)

    def _take_one(self, host: HostState, slot: str, body: Any) -> None:
        try:
            if not isinstance(body, dict) or set(body) != {"seq", "event"}:
                raise schema.Malformed("an event's envelope is {seq, event}")
            seq = schema.whole(body["seq"], "seq", host.seq, MAX_SLOTS)
            event = schema.event(body["event"])
        except schema.Malformed as why:
            self._drop(host.rank, slot, why=str(why))
            return
        if seq > host.seq:
            self.dropped.setdefault(host.rank, Dropped()).overwritten += seq - host.seq
        host.seq = seq + 1
        host.read += 1
        self._alive(host)
        kind = type(event).__name__
        if kind == "RunStarted":
            host.began = event.t
        if kind in ("RunStarted", "RunFinished"):
            return  # the agent's own run; the fleet run begins and ends here
        host.last_event = describe(event, host.began)
        self._rows.append((event, host.label))
        if len(self._rows) >= ROWS_PER_WRITE:  # a thousand hosts' burst lands as it is read, not all at the end
            self._flush()
