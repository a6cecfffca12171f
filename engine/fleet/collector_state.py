"""What rank 0 keeps while it collects (hosts, drops, rows not yet written) and the few steps every part uses."""

from __future__ import annotations

import threading
from typing import Any

from rigcheck.engine.events import Event
from rigcheck.engine.fleet.channel import FleetChannel
from rigcheck.engine.fleet.hosts import HostState
from rigcheck.engine.fleet.intake import Dropped
from rigcheck.engine.fleet.slots import Read
from rigcheck.engine.fleet.tamper import tampered
from rigcheck.engine.store import Store


class CollectorState:
    """The collector's state, set by Collector.__init__ (engine/fleet/collector.py), and its shared steps:
    a value counted as dropped, a slot opened, this poll's rows written."""

    store: Store
    run_id: int
    channel: FleetChannel
    fleet: dict[str, Any]
    join_timeout: float
    lost_after: float
    phase_timeout: float
    hosts: list[HostState]
    dropped: dict[int | None, Dropped]
    started: float
    phases: dict[str, list[int] | None]
    _first_arrival: dict[str, float]
    errors: list[str]
    _rows: list[tuple[Event, str]]
    _states_changed: bool
    _writing: threading.Lock
    beat_s: float
    _lead: dict[str, Any] | None

    # -- reading, each value checked --
    def _drop(self, rank: int | None, slot: str, found: Read | None = None, why: str = "") -> None:
        """Count one value that did not pass: forged on the host whose slot it sat in, unreadable on (unknown)."""
        reason = found.state if found is not None else "malformed"
        owner = None if reason == "unreadable" else rank
        detail = found.detail if found is not None else why
        raw = found.raw if found is not None else why.encode()  # a value read again each poll counts once
        self.dropped.setdefault(owner, Dropped()).count(reason, detail, raw, slot)

    def _opened(self, rank: int, slot: str, nonce: str | None = None) -> Any | None:
        """A slot's body once its seal passed; a bad one is counted (once per value) and reads as missing."""
        found = self.channel.read(slot, nonce)
        if found.state == "ok":
            return found.body
        if found.state != "missing":
            self._drop(rank, slot, found)
        return None

    def _flush(self) -> None:
        """This poll's rows in one transaction (kept for the next poll if the store refused them), then the
        hosts' states if they changed."""
        with self._writing:
            if self._rows:
                with self.store.transaction():
                    for event, host in self._rows:
                        self.store.record(self.run_id, event, host=host)
                self._rows = []
            if self._states_changed:
                self._states_changed = False
                self.fleet["hosts"] = [h.label for h in self.hosts]
                self.fleet["states"] = {h.label: h.state for h in self.hosts}
                self.store.update_fleet(self.run_id, self.fleet)

    def _tampered(self, host: HostState, sign: str, key: str = "") -> None:
        tampered(host, self.dropped.setdefault(host.rank, Dropped()), sign, key)

    def _save_states(self) -> None:
        """The hosts' states, written once at the end of the poll however many changed."""
        self._states_changed = True
