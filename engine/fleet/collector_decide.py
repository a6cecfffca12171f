"""Rank 0's decisions while it collects: who is lost or gave up, who is in a phase, and what is named on the way."""

from __future__ import annotations

import time
from typing import Any

from rigcheck.engine.events import LogLine, Status, Verdict
from rigcheck.engine.fleet.collector_state import CollectorState
from rigcheck.engine.fleet.hosts import HostState
from rigcheck.engine.fleet.intake import UNKNOWN, dropped_verdict
from rigcheck.engine.fleet.tamper import lost_verdict


class Decisions(CollectorState):
    """Rank 0 decides: a host lost or given up on, its name kept apart, its options compared, a phase's members."""

    def arrived(self, phase: str, rank: int) -> bool:
        body = self._opened(rank, f"arrive/{phase}/{rank}")
        return isinstance(body, dict)

    # -- deciding --
    def _unique(self, name: str, rank: int) -> str:
        """Two agents that report one host name (RIGCHECK_NODE_NAME set alike, or one machine twice) stay apart."""
        if name and name not in {h.name for h in self.hosts if h.rank != rank} and name != UNKNOWN:
            return name
        unique = f"{name or 'host'} (rank {rank})"
        self.store.record(
            self.run_id,
            LogLine(
                "fleet", f"rank {rank} reports the host name {name!r} another agent has: shown as {unique}", "warning"
            ),
        )
        return unique

    def _check_options(self, host: HostState, info: dict[str, Any]) -> None:
        """An agent started with other stages or another profile than rank 0 is a finding: its figures are not
        the others', and the collectives follow rank 0's profile."""
        if host.rank and self._lead is None:  # read once: a thousand hosts join against one announcement
            self._lead = self.channel.host(0)
        lead = self._lead if host.rank else None
        if not lead:
            return
        differ = [
            f"{key} {info.get(key)!r} where rank 0 ({lead.get('name')}) has {lead.get(key)!r}"
            for key in ("stages", "profile")
            if info.get(key) != lead.get(key)
        ]
        if differ:
            text = f"{host.label} was started otherwise: {'; '.join(differ)}; the collectives use rank 0's profile"
            verdict = Verdict("fleet", "fleet-options", Status.WARN, text, {"differ": differ})
            self.store.record(self.run_id, verdict, host=host.label)

    def give_up(self, why: str) -> None:
        """Rank 0 stops waiting: every agent still running is named, and what it sent is kept."""
        self._flush()
        for host in self.hosts:
            if host.state not in ("done", "lost"):
                host.state = "lost"
                text = f"{host.label} had not finished: {why} (its last event: {host.last_event})"
                verdict = Verdict("fleet", "agent", Status.TIMEOUT, text, {"rank": host.rank, "events": host.read})
                self.store.record(self.run_id, verdict, host=host.label)
                self.store.interrupt_host_stages(self.run_id, host.label)
        self._save_states()
        self._flush()

    def record_dropped(self) -> None:
        """A WARN on each host (or on "(unknown)") for what rank 0 dropped from the store."""
        self._flush()
        for rank, dropped in sorted(self.dropped.items(), key=lambda item: -1 if item[0] is None else item[0]):
            if not dropped.total and not dropped.tampered:
                continue
            host = UNKNOWN if rank is None else self.hosts[rank].label
            local = "" if rank is None else self.hosts[rank].local_run
            self.store.record(self.run_id, dropped_verdict(host, dropped, local), host=host)

    def _lose(self, host: HostState, why: str, refused: bool = False) -> None:
        """Rank 0 stops waiting for `host`: lost, or silenced by someone who tampered with the store."""
        self._flush()  # its stages' starts first, so that the running ones are marked INTERRUPTED
        host.state = "lost"
        self.store.record(self.run_id, lost_verdict(host, why, refused), host=host.label)
        self.store.interrupt_host_stages(self.run_id, host.label)
        self._save_states()

    def _alive(self, host: HostState) -> None:
        """A new event of this run is a sign of life as good as a heartbeat; one that comes while the heartbeat
        has been missing for two beats (an agent beats with every burst) says someone deletes it."""
        now = time.monotonic()
        host.beat_seen = max(host.beat_seen, now)
        missing = host.hb_missing_since
        if host.final is None and missing is not None and now - missing > 2 * self.beat_s:
            slot = f"hb/{host.rank}"
            self._tampered(host, f"its heartbeat {slot} was missing while its events kept coming", slot)

    def _decide_phases(self) -> None:
        for phase, members in self.phases.items():
            if members is not None:
                continue
            arrived = [h.rank for h in self.hosts if h.state != "lost" and self._has_arrived(phase, h)]
            pending = [h for h in self.hosts if h.state not in ("lost", "done") and h.rank not in arrived]
            if arrived:
                self._first_arrival.setdefault(phase, time.monotonic())
            late = arrived and time.monotonic() - self._first_arrival[phase] > self.phase_timeout
            if pending and not late:
                continue
            self.phases[phase] = arrived
            self.channel.set_members(phase, arrived)
            left_out = [h.label for h in self.hosts if h.rank not in arrived]
            if left_out:
                why = f" (not there {self.phase_timeout:g} s after the first)" if late else ""
                self.store.record(
                    self.run_id, LogLine("fleet", f"{phase}: without {', '.join(left_out)}{why}", "warning"), host=""
                )

    def _has_arrived(self, phase: str, host: HostState) -> bool:
        """Looked up in its own key once the host's state says so, or when the host is scanned."""
        if phase not in host.phases and (phase in host.hinted or host.scanning) and self.arrived(phase, host.rank):
            host.phases.add(phase)
        return phase in host.phases
