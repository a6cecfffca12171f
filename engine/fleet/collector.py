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

from rigcheck.engine.events import Event, LogLine, Status, Verdict
from rigcheck.engine.fleet import schema
from rigcheck.engine.fleet.channel import (
    MAX_BURST_BYTES,
    MAX_BURST_EVENTS,
    FleetChannel,
    Read,
    heartbeat_interval,
    refusal_nonce,
)
from rigcheck.engine.fleet.handshake import ASK_AGAIN_S, answer
from rigcheck.engine.fleet.hosts import HostState, describe
from rigcheck.engine.fleet.intake import UNKNOWN, Dropped, dropped_verdict
from rigcheck.engine.fleet.tamper import lost_verdict, seen_again, tampered
from rigcheck.engine.store import Store

POLL_S = 0.25
READS_PER_POLL = 200  # events read from one host in one poll, at most: a flood waits for the next poll
LOOKAHEAD = 8  # slots looked at past a missing one (someone deleted it) before waiting for the agent
LOOKAHEAD_EVERY_S = 2.0  # at most this often per host: the store serves every host's reads
REFUSAL_CHECK_S = 2.0  # heartbeat silence after which rank 0 looks for a refusal (and for an end)
SCAN_EVERY_S = 30.0  # per host: its next slot and its end looked at directly, whatever its state says
SCANS_PER_POLL = 8  # hosts whose first scan falls in one poll: a thousand hosts' scans spread over the cycle
KEYS_PER_CALL = 512  # agents' states, or new slots of all agents, read in one check and one multi_get
ROWS_PER_WRITE = 500  # rows written in one transaction as a poll reads them: many a write, and none waits long
SLOTS_PER_POLL = 8192  # new slots of all agents read together in one poll, at most; the rest next poll
MAX_PHASES = 16
MAX_SLOTS = 10**9


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

    def _states(self, now: float) -> None:
        """Every running agent's state, KEYS_PER_CALL at a time: its heartbeat, its slots, its phases."""
        running = [h for h in self.hosts if h.state == "running" and h.final is None]
        for start in range(0, len(running), KEYS_PER_CALL):
            chunk = running[start : start + KEYS_PER_CALL]
            keys = [f"hb/{h.rank}" for h in chunk]
            for host, slot, found in zip(chunk, keys, self.channel.read_many(keys), strict=True):
                if found.state != "ok":  # gone, or replaced by a value that does not pass
                    if host.hb_missing_since is None:
                        host.hb_missing_since = time.monotonic()
                    if host.beats >= 0:  # read before, and an agent never deletes or spoils its heartbeat
                        what = "vanished" if found.state == "missing" else f"was replaced ({found.state})"
                        self._tampered(host, f"its heartbeat {slot} {what} after rank 0 had read it", slot)
                    if found.state != "missing":
                        self._drop(host.rank, slot, found)
                    continue
                host.hb_missing_since = None
                seen_again(host, slot)
                self._state(host, slot, found.body)

    def _state(self, host: HostState, slot: str, body: Any) -> None:
        try:
            if not isinstance(body, dict):
                raise schema.Malformed("a state is an object")
            beat = schema.whole(body.get("beat"), "beat", 0, MAX_SLOTS * 1000)
            slots = schema.whole(body.get("slots", 0), "slots", 0, MAX_SLOTS)
            arrived = body.get("arrived", [])
            if not isinstance(arrived, list) or len(arrived) > MAX_PHASES:
                raise schema.Malformed(f"a state's phases are a list of at most {MAX_PHASES}")
            phases = {schema.inert(str(p))[:64] for p in arrived if isinstance(p, str)}
        except schema.Malformed as why:
            self._drop(host.rank, slot, why=str(why))
            return
        if beat < host.beats:  # an agent's heartbeat only rises: an older one of this run, written back
            self._tampered(host, f"its heartbeat went back from {host.beats} to {beat}")
            return
        if beat == host.beats:
            return  # the same state read again: it says nothing new
        if slots < host.known:
            self._tampered(host, f"its count of event slots went back from {host.known} to {slots}")
        # when it was read, not when the poll began: a poll of a thousand joining hosts can take long, and the
        # same beat read again later would leave a stale time that names a live host lost
        host.beats, host.beat_seen = beat, time.monotonic()
        host.known = max(host.known, slots)
        host.ended = host.ended or body.get("ended") is True
        host.hinted |= phases

    def _join(self, host: HostState, now: float) -> bool:
        if host.rank and (host.answered is None or now - host.asked_at >= ASK_AGAIN_S):
            host.asked_at = now  # its ask once it is there, then again while it waits (someone may replace it)
            answered, present = answer(self.channel, host.rank, host.answered)
            if answered is not None and not present:
                self._tampered(host, f"its request for the run's nonce ask/{host.rank} vanished", f"ask/{host.rank}")
            elif present:
                seen_again(host, f"ask/{host.rank}")
            host.answered = answered
        slot = f"host/{host.rank}"
        body = self._opened(host.rank, slot)
        info = None
        if body is not None:
            try:
                info = schema.announcement(body)
            except schema.Malformed as why:
                self._drop(host.rank, slot, why=str(why))
        if info is None:
            if self._refused(host):
                return False
            if now - self.started > self.join_timeout:
                self._lose(host, f"its agent never joined within {self.join_timeout:.0f} s")
            return False
        host.name, host.state, host.beat_seen = self._unique(info["name"], host.rank), "running", time.monotonic()
        # the first scan at once for the first few hosts, later for the rest: never a thousand in one poll
        host.scanned = now - SCAN_EVERY_S + (host.rank // SCANS_PER_POLL) * POLL_S % SCAN_EVERY_S
        self._save_states()
        self._check_options(host, info)
        return True

    def _end(self, host: HostState) -> None:
        slot = f"done/{host.rank}"
        body = self._opened(host.rank, slot)
        if body is None:
            return
        try:
            if not isinstance(body, dict):
                raise schema.Malformed("an end is an object")
            final = schema.whole(body.get("slots"), "slots", 0, MAX_SLOTS)
            sent = schema.whole(body.get("sent"), "sent", 0, MAX_SLOTS)
            run = body.get("run_id")
            where = schema.inert(str(body.get("store") or ""))[:4096]
        except schema.Malformed as why:
            self._drop(host.rank, slot, why=str(why))
            return
        host.final, host.sent = final, sent
        if isinstance(run, int) and where:
            host.local_run = f"run {run} of {where} on {host.label}"

    def _refused(self, host: HostState) -> bool:
        body = self._opened(host.rank, f"refused/{host.rank}", refusal_nonce(host.rank, self.channel.nonce))
        why = body.get("why") if isinstance(body, dict) else None
        if not isinstance(why, str):
            return False
        name = body.get("name")
        if not host.name and isinstance(name, str) and schema.inert(name).strip():
            host.name = self._unique(schema.inert(name).strip()[:128], host.rank)
        self._lose(host, f"its agent refused to start: {schema.inert(why)[:1000]}", refused=True)
        return True

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

    def _tampered(self, host: HostState, sign: str, key: str = "") -> None:
        tampered(host, self.dropped.setdefault(host.rank, Dropped()), sign, key)

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

    def _save_states(self) -> None:
        """The hosts' states, written once at the end of the poll however many changed."""
        self._states_changed = True
