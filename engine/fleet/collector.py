"""Rank 0's side of a fleet run: every agent's events into one store run, each with its host, and the lost named.

A thread polls the channel a few times a second. An agent that never announces itself within the join
timeout, or whose heartbeat stops for `lost_after` seconds before it finished, is lost: a CRASH verdict on its
host quotes its last event, its running stages become INTERRUPTED, and the others carry on.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from rigcheck.engine.events import Event, LogLine, Status, Verdict, event_from_dict
from rigcheck.engine.fleet.channel import FleetChannel
from rigcheck.engine.store import Store

POLL_S = 0.25


@dataclass
class HostState:
    rank: int
    name: str = ""
    state: str = "waiting"  # waiting | running | done | lost
    read: int = 0  # events read so far
    beats: int = -1
    beat_seen: float = field(default_factory=time.monotonic)
    last_event: str = "none"

    @property
    def label(self) -> str:
        return self.name or f"rank {self.rank}"


def describe(event: Event) -> str:
    """A few words for a host's last event, for the lost-host verdict."""
    kind = type(event).__name__
    stage = getattr(event, "stage", "")
    if kind == "Measurement":
        return f"{stage}: figure {event.name} at {event.t:.0f}"  # type: ignore[union-attr]
    if kind == "Progress":
        return f"{stage}: {event.done}/{event.total} {event.what}".strip()  # type: ignore[union-attr]
    if kind == "StageStarted":
        return f"{stage} started"
    if kind == "StageFinished":
        return f"{stage} finished {event.status.value}"  # type: ignore[union-attr]
    return f"{stage}: {kind}"


class Collector:
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
        self.started = time.monotonic()
        self.phases: dict[str, list[int] | None] = {}
        self._first_arrival: dict[str, float] = {}
        self.errors: list[str] = []
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
        for host in self.hosts:
            if host.state in ("done", "lost"):
                continue
            if host.state == "waiting":
                info = self.channel.host(host.rank)
                if info is None:
                    if now - self.started > self.join_timeout:
                        self._lose(host, f"its agent never joined within {self.join_timeout:.0f} s")
                    continue
                host.name, host.state, host.beat_seen = (
                    self._unique(str(info.get("name") or ""), host.rank),
                    "running",
                    now,
                )
                self._save_states()
                self._check_options(host, info)
            self._read_events(host)
            beats = self.channel.beats(host.rank)
            if beats != host.beats:
                host.beats, host.beat_seen = beats, now
            done = self.channel.done(host.rank)
            if done is not None:
                self._read_events(host)  # everything it sent before its end
                host.state = "done"
                self._save_states()
            elif now - host.beat_seen > self.lost_after:
                self._lose(host, f"its agent stopped answering for {self.lost_after:.0f} s")
        self._decide_phases()

    def _unique(self, name: str, rank: int) -> str:
        """Two agents that report one host name (RIGCHECK_NODE_NAME set alike, or one machine twice) stay apart."""
        if name and name not in {h.name for h in self.hosts if h.rank != rank}:
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
        lead = self.channel.host(0) if host.rank else None
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
        for host in self.hosts:
            if host.state not in ("done", "lost"):
                host.state = "lost"
                text = f"{host.label} had not finished: {why} (its last event: {host.last_event})"
                verdict = Verdict("fleet", "agent", Status.TIMEOUT, text, {"rank": host.rank, "events": host.read})
                self.store.record(self.run_id, verdict, host=host.label)
                self.store.interrupt_host_stages(self.run_id, host.label)
        self._save_states()

    def _read_events(self, host: HostState) -> None:
        for data in self.channel.events(host.rank, host.read):
            host.read += 1
            event = event_from_dict(data)
            if event is None:
                continue
            if type(event).__name__ in ("RunStarted", "RunFinished"):
                continue  # the agent's own run; the fleet run begins and ends here
            host.last_event = describe(event)
            self.store.record(self.run_id, event, host=host.label)

    def _lose(self, host: HostState, why: str) -> None:
        host.state = "lost"
        explanation = (
            f"{host.label} is lost: {why} (its last event: {host.last_event}); its results up to then are kept, "
            "and the other hosts carried on"
        )
        self.store.record(
            self.run_id,
            Verdict("fleet", "agent", Status.CRASH, explanation, {"rank": host.rank, "events": host.read}),
            host=host.label,
        )
        self.store.interrupt_host_stages(self.run_id, host.label)
        self._save_states()

    def _decide_phases(self) -> None:
        for phase, members in self.phases.items():
            if members is not None:
                continue
            arrived = [h.rank for h in self.hosts if h.state != "lost" and self.channel.arrived(phase, h.rank)]
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

    def _save_states(self) -> None:
        self.fleet["hosts"] = [h.label for h in self.hosts]
        self.fleet["states"] = {h.label: h.state for h in self.hosts}
        self.store.update_fleet(self.run_id, self.fleet)
