"""Rank 0 reads each agent's own keys: its state (heartbeat), its announcement when it joins, its end, a refusal."""

from __future__ import annotations

import time
from typing import Any

from rigcheck.engine.fleet import schema
from rigcheck.engine.fleet.channel import refusal_nonce
from rigcheck.engine.fleet.collector_decide import Decisions
from rigcheck.engine.fleet.collector_limits import (
    KEYS_PER_CALL,
    MAX_PHASES,
    MAX_SLOTS,
    POLL_S,
    SCAN_EVERY_S,
    SCANS_PER_POLL,
)
from rigcheck.engine.fleet.handshake import ASK_AGAIN_S, answer, answer_kept, give_nonce, kept_report
from rigcheck.engine.fleet.hosts import HostState
from rigcheck.engine.fleet.intake import Dropped
from rigcheck.engine.fleet.tamper import seen_again, tampered


class HostReads(Decisions):
    """Each agent's state, announcement, end and refusal, each value checked before it counts."""

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
            answered, present, sign = answer(self.channel, host.rank, host.answered)
            if answered is not None and not present:
                self._tampered(host, f"its request for the run's nonce ask/{host.rank} vanished", f"ask/{host.rank}")
            elif present:
                seen_again(host, f"ask/{host.rank}")
            if sign is not None:
                self._tampered(host, sign)
            if answered is not None and answered == host.answered:  # given before: is it still there?
                sign = answer_kept(self.channel, host.rank, answered)
                if sign is not None:
                    self._tampered(host, sign)
            answered = self._kept_out(host, answered)
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

    def _kept_out(self, host: HostState, answered: str | None) -> str | None:
        """What the agent reported of its handshake tampered with: counted here as tampering (rank 0 may never
        have seen its ask), and its challenge answered here too; the challenge answered."""
        report = kept_report(self.channel, host.rank)
        if report is None:
            return answered
        challenge, signs, words = report
        if signs > host.kept_signs:
            sign = f"its agent saw its request for the run's nonce tampered with ({words})"
            tampered(host, self.dropped.setdefault(host.rank, Dropped()), sign, count=signs - host.kept_signs)
            host.kept_signs = signs
        if challenge != answered:
            give_nonce(self.channel, host.rank, challenge)
        return challenge

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
        if not isinstance(body, dict) or not isinstance(why, str):
            return False
        name = body.get("name")
        if not host.name and isinstance(name, str) and schema.inert(name).strip():
            host.name = self._unique(schema.inert(name).strip()[:128], host.rank)
        self._lose(host, f"its agent refused to start: {schema.inert(why)[:1000]}", refused=True)
        return True
