"""Rank 0's side of a fleet run: every agent's events into one store run, each with its host, and the lost named.

A thread polls the channel a few times a second: one multi_get of every running agent's state (its sealed
heartbeat, which also says how many slots it has filled and which phases it reached), then only the slots
that are new, KEYS_PER_CALL a call; each slot holds a burst of an agent's events. A slow scan of each host's
next slot and end, spread over SCAN_EVERY_S, finds what no state announced. The rows a poll reads are written
in transactions of ROWS_PER_WRITE. An agent that never announces itself within the join timeout, or whose
heartbeat stops for `lost_after` seconds before it finished, is lost: a CRASH verdict on its host quotes its
last event, its running stages become INTERRUPTED, and the others carry on. An agent that
refused to start says why, and the verdict quotes it.

Nothing read from the store is trusted: each value's seal and schema are checked first (what fails is dropped
and counted, engine/fleet/intake.py), reads per poll are bounded, and no peer's number sets a loop's length.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rigcheck.engine.events import Event
from rigcheck.engine.fleet.channel import FleetChannel, heartbeat_interval
from rigcheck.engine.fleet.collector_events import EventReads
from rigcheck.engine.fleet.collector_hosts import HostReads
from rigcheck.engine.fleet.collector_limits import (
    KEYS_PER_CALL,
    LOOKAHEAD,
    LOOKAHEAD_EVERY_S,
    MAX_PHASES,
    MAX_SLOTS,
    POLL_S,
    READS_PER_POLL,
    REFUSAL_CHECK_S,
    ROWS_PER_WRITE,
    SCAN_EVERY_S,
    SCANS_PER_POLL,
    SLOTS_PER_POLL,
)
from rigcheck.engine.fleet.hosts import HostState, describe
from rigcheck.engine.fleet.intake import Dropped
from rigcheck.engine.store import Store


class Collector(HostReads, EventReads):
    """Reads every agent's events into fleet run `run_id` of `store` and decides who is lost and who is in a phase."""

    def __init__(
        self,
        store: Store,
        run_id: int,
        channel: FleetChannel,
        fleet: dict[str, Any],
        join_timeout: float,
        lost_after: float,
        phase_timeout: float = 3600.0,
    ) -> None:
        self.store, self.run_id, self.channel, self.fleet = store, run_id, channel, fleet
        self.join_timeout, self.lost_after, self.phase_timeout = join_timeout, lost_after, phase_timeout
        self.hosts = [HostState(rank) for rank in range(channel.world)]
        self.dropped: dict[int | None, Dropped] = {}  # by rank; None: a sender that cannot be told
        self.started = time.monotonic()
        self.phases: dict[str, list[int] | None] = {}
        self._first_arrival: dict[str, float] = {}
        self.errors: list[str] = []
        self._rows: list[tuple[Event, str]] = []  # read in this poll, written at its end in one transaction
        self._states_changed = False
        self._writing = threading.Lock()
        self.beat_s = heartbeat_interval(lost_after)  # how often each agent beats
        self._lead: dict[str, Any] | None = None  # rank 0's own announcement, once read
        self._refusal_checked = float("-inf")  # when rank 0's own refusal slot was last looked at
        self._stop = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rigcheck-fleet-collector", daemon=True)

    def start(self) -> Collector:
        self._thread.start()
        return self

    def open_phase(self, phase: str) -> None:
        """Rank 0 will admit to `phase` every agent that arrives, once each live agent has arrived or is lost,
        or `phase_timeout` after the first arrived: one deadline for all, kept by rank 0 alone."""
        self.phases.setdefault(phase, None)

    def wait(self, timeout: float | None = None) -> bool:
        """True once every agent has finished or is lost."""
        return self._done.wait(timeout)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)
        self._flush()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception as error:  # rank 0's own agent keeps going; the run records why reading stopped
                self.errors.append(f"{type(error).__name__}: {error}")
                if len(self.errors) > 20:
                    self._done.set()
                    return
            if all(h.state in ("done", "lost") for h in self.hosts):
                self._done.set()
            self._stop.wait(POLL_S)

    def poll(self) -> None:
        now = time.monotonic()
        self._states(now)
        if now - self._refusal_checked >= REFUSAL_CHECK_S:  # rank 0 never refuses while it collects: a value in
            self._refusal_checked = now  # its refusal slot is someone else's (a replay, a forgery): dropped, counted
            self._opened(0, "refused/0")
        ready = self._prefetch()
        for host in self.hosts:
            if host.state in ("done", "lost"):
                continue
            if host.state == "waiting" and not self._join(host, now):
                continue
            silent = self._silent(host, now)
            # a silent host is scanned too: its events still say it lives when someone deletes its heartbeat
            host.scanning = now - host.scanned >= SCAN_EVERY_S or silent
            if host.scanning:
                host.scanned = now
                if host.final is None and host.beats < 0:  # its state read on its own: it has just joined
                    body = self._opened(host.rank, f"hb/{host.rank}")
                    if body is not None:
                        self._state(host, f"hb/{host.rank}", body)
            if host.final is None:
                if host.scanning or host.behind or host.known > host.slot:
                    host.behind = not self._read_events(host, ready)
                if host.scanning or host.ended or silent:
                    self._end(host)
            if host.final is not None:
                if self._read_events(host):
                    host.state = "done"
                    self._save_states()
            elif silent and self._refused(host):
                continue
            elif now - host.beat_seen > self.lost_after:
                self._lose(host, f"its agent stopped answering for {self.lost_after:.0f} s")
        self._decide_phases()
        self._flush()

    def _silent(self, host: HostState, now: float) -> bool:
        """Its heartbeat is late (two beats and REFUSAL_CHECK_S): time to look for its end or a refusal, at most
        once every REFUSAL_CHECK_S for each host (at a thousand hosts, two round trips each add up)."""
        if now - host.beat_seen <= 2 * self.beat_s + REFUSAL_CHECK_S or now - host.silence_checked < REFUSAL_CHECK_S:
            return False
        host.silence_checked = now
        return True


# kept importable here: the tests and the scale bench import these from the collector
__all__ = [
    "KEYS_PER_CALL",
    "LOOKAHEAD",
    "LOOKAHEAD_EVERY_S",
    "MAX_PHASES",
    "MAX_SLOTS",
    "POLL_S",
    "READS_PER_POLL",
    "REFUSAL_CHECK_S",
    "ROWS_PER_WRITE",
    "SCANS_PER_POLL",
    "SCAN_EVERY_S",
    "SLOTS_PER_POLL",
    "Collector",
    "describe",
]
