"""One host's agent in a fleet run: its own engine run on every local GPU, its events sent on to rank 0 as they
happen, then the inter-host collectives with the agents still alive; rank 0 also collects and compares.

The agent process imports torch only for the c10d store (no CUDA); the stages still run in spawned children.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from contextlib import suppress

from rigcheck.engine.events import Event, LogLine, Measurement, StageFinished, StageStarted, Status, Verdict, worst
from rigcheck.engine.exits import EXIT_INTERRUPTED, EXIT_USAGE, combine
from rigcheck.engine.fleet.args import FleetOptions
from rigcheck.engine.fleet.channel import FleetChannel, Heartbeat, heartbeat_interval
from rigcheck.engine.fleet.collector import Collector
from rigcheck.engine.fleet.env import FleetEnv
from rigcheck.engine.fleet.handshake import NoNonce, take_nonce
from rigcheck.engine.fleet.pairs import STAGE as LINKS_STAGE
from rigcheck.engine.fleet.refusal import refuse_asks, refuse_early, refuse_on
from rigcheck.engine.fleet.store_link import FleetStoreError, connect
from rigcheck.engine.report.failures import strict_code
from rigcheck.engine.run.figures import annotate_figure
from rigcheck.engine.run.owner import OwnedRun
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import exit_code_for
from rigcheck.engine.run.session import start_sampler
from rigcheck.engine.store import Store
from rigcheck.engine.trust.conditions import ConditionsAnnotator

__all__ = ["Agent", "FleetStoreError", "connect", "finish_fleet", "refuse_early", "take_nonce"]

FAULT_ENV = "RIGCHECK_FLEET_FAULT"  # test hook: 'die-after:STAGE[@RANK]' kills this agent when STAGE ends
LINKS_PHASE = "links"
PHASE_GRACE_S = 60.0
REFUSAL_ASKS_S = 30.0  # how long a rank 0 that refused answers the asks of agents still waiting for the nonce
FAULT_WAIT_S = 180.0  # how long the test hook's rank 0 waits for every host to end the stage before it dies


def _fault_listener(fault: str, rank: int, ended_everywhere: Callable[[str], bool]) -> Callable[[Event], None] | None:
    """'die-after:STAGE' kills this agent when STAGE ends; 'die-after:STAGE@R' only the agent of rank R. The agent
    waits first until ended_everywhere(STAGE) says every host has ended it (rank 0 reads that in its fleet run), so
    what a test asserts of the other hosts' STAGE does not depend on which host was quicker."""
    if not fault.startswith("die-after:"):
        return None
    stage, _, only = fault.split(":", 1)[1].partition("@")
    if only and int(only) != rank:
        return None

    def die(event: Event) -> None:
        if isinstance(event, StageFinished) and event.stage == stage:
            deadline = time.monotonic() + FAULT_WAIT_S
            while not ended_everywhere(stage) and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(0.3)  # let the heartbeat and forwarding threads send what they hold, as a real crash might not
            os.kill(os.getpid(), signal.SIGKILL)

    return die


class Agent:
    def __init__(self, env: FleetEnv, store: Store, request: RunRequest, options: FleetOptions, key: bytes) -> None:
        self.env, self.store, self.request, self.options, self.key = env, store, request, options, key
        self.channel: FleetChannel | None = None
        self.fleet_run_id: int | None = None
        self.local_run_id: int | None = None
        self.collector: Collector | None = None
        self.say: Callable[[str], None] = lambda text: print(f"rigcheck fleet [{env.node}]: {text}", file=sys.stderr)

    def run(self) -> int:
        channel = self.channel = FleetChannel(
            connect(self.env, self.options.join_timeout), self.env.rank, self.env.world, self.key, self.env.run_id
        )
        try:
            take_nonce(channel, self.options.join_timeout)
        except NoNonce as error:  # this host's run goes on alone: its own store has it all, and says why
            channel.broken = str(error)
            code = self._local_run(channel, kept_out=error)
            whole = "are whole" if code != EXIT_INTERRUPTED else "up to its stop are"
            where = f"run {self.local_run_id} of {self.store.path}"
            self.say(f"{error}: this host's results {whole} in its own store, {where}")
            return code
        beat = Heartbeat(channel, heartbeat_interval(self.options.lost_after)).start()
        channel.announce(
            {
                "name": self.env.node,
                "pid": os.getpid(),
                "devices": list(self.request.devices),
                "stages": [info.name for info in self.request.stages],
                "profile": self.request.profile,
                "collective_timeout": self.options.collective_timeout,
                "store": str(self.store.path),
            }
        )
        if self.env.rank == 0:
            self._start_collecting(channel)
        code = self._local_run(channel)
        if channel.broken is not None or code == EXIT_INTERRUPTED:
            channel.close()  # what it held of its last burst goes to rank 0 while the store answers
            beat.stop()
            why = f"rank 0's store stopped answering ({channel.broken})" if channel.broken else "stopped"
            self.say(
                f"{why}: this host's results are whole in its own store, run {self.local_run_id} of {self.store.path}"
            )
            return code
        try:
            if self.options.links and self.env.world > 1:
                code = combine([code, self._links(channel)])
            channel.finish({"exit_code": code, "run_id": self.local_run_id, "store": str(self.store.path)})
        except Exception as error:  # rank 0 went away during the collectives: this host's store has them
            channel.broken = (
                channel.broken or f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
            )
        if channel.broken is not None:
            beat.stop()
            self.say(
                f"rank 0's store stopped answering ({channel.broken}): this host's results are whole in its own "
                f"store, run {self.local_run_id} of {self.store.path}"
            )
            return code
        if self.env.rank == 0:
            code = combine([code, self._finish_fleet()])
        else:
            zero = channel.host(0) or {}
            self.say(f"the fleet run is in rank 0's store: {zero.get('name', '?')}:{zero.get('store', '?')}")
        beat.stop()
        return code

    def _start_collecting(self, channel: FleetChannel) -> None:
        fleet = {"id": self.env.run_id, "world": self.env.world, "launcher": self.env.launcher, "rank0": self.env.node}
        names = [info.name for info in self.request.stages]
        self.fleet_run_id = self.store.begin_fleet_run(
            names, self.request.profile, self.request.python, list(self.request.argv), fleet
        )
        self.collector = Collector(
            self.store,
            self.fleet_run_id,
            channel,
            fleet,
            self.options.join_timeout,
            self.options.lost_after,
            self.options.phase_timeout,
        )
        self.collector.open_phase(LINKS_PHASE)
        self.collector.start()
        self.say(f"fleet run {self.fleet_run_id} in {self.store.path}: {self.env.world} host(s)")

    def _local_run(self, channel: FleetChannel, kept_out: NoNonce | None = None) -> int:
        owned = OwnedRun(self.store, self.request)
        self.local_run_id = owned.run_id
        if kept_out is not None:  # its own store says why it ran alone (SKIP: the fleet part, not the host)
            check = "fleet-store" if kept_out.signs else "agent"
            text = f"this host ran alone, kept out of the fleet run: {kept_out}"
            self.store.record(owned.run_id, Verdict("fleet", check, Status.SKIP, text, {"tampered": kept_out.signs}))
        owned.listen(channel.publish)
        fault = _fault_listener(os.environ.get(FAULT_ENV, ""), self.env.rank, self._ended_everywhere)
        if fault is not None:
            owned.listen(fault)
        self.say(f"run {owned.run_id} on {', '.join(self.request.devices)} ({len(self.request.stages)} stage(s))")
        return owned.run_to_end()

    def _ended_everywhere(self, stage: str) -> bool:
        """Whether every host's STAGE has ended in rank 0's fleet run (an agent of another rank cannot see that)."""
        if self.fleet_run_id is None:
            return True
        rows = self.store.stage_rows(self.fleet_run_id)
        ended = {row["host"] for row in rows if row["name"] == stage and row["status"] != "running"}
        return len(ended) >= self.env.world

    def _links(self, channel: FleetChannel) -> int:
        """The inter-host collectives and the pairwise round, with the agents rank 0 admitted."""
        channel.arrive(LINKS_PHASE)
        # rank 0 keeps the one deadline; this wait outlasts it, only so a rank 0 that hangs is not waited on forever
        deadline = time.monotonic() + self.options.phase_timeout + self.options.lost_after + PHASE_GRACE_S
        members = channel.members(LINKS_PHASE)
        while members is None and time.monotonic() < deadline:
            if self.env.rank and channel.refused(0) is not None:
                self._send(channel, LogLine("fleet-links", "rank 0 refused to start: no collectives", "warning"))
                return 0
            time.sleep(0.25)
            members = channel.members(LINKS_PHASE)
        if members is None:
            self._send(channel, LogLine("fleet-links", "rank 0 never decided who meets for the collectives", "warning"))
            return 0
        if self.env.rank not in members:
            text = "the collectives met without this host: it reached them after rank 0's --phase-timeout"
            self._send(channel, LogLine("fleet-links", text, "warning"))
            return 0
        if len(members) < 2:
            return 0
        return self._run_links(channel, members)

    def _run_links(self, channel: FleetChannel, members: list[int]) -> int:
        from rigcheck.engine.fleet.links import FleetLinksPlan, fleet_collectives, pairwise_rounds

        infos = {rank: channel.host(rank) or {} for rank in members}
        hosts = tuple(str(infos[rank].get("name") or f"rank {rank}") for rank in members)
        lead = channel.host(0) or {}  # every agent sizes the collectives as rank 0 does, whatever it was given
        profile = str(lead.get("profile") or self.request.profile)
        step_timeout = float(lead.get("collective_timeout") or self.options.collective_timeout)
        # NCCL where every host brings GPUs; a fleet with a CPU-only host meets on gloo, one CPU rank per host
        gpu = all(str(d).startswith("cuda") for rank in members for d in infos[rank].get("devices") or ["cpu"])
        local = tuple(self.request.devices) if gpu else ("cpu",)
        plan = FleetLinksPlan(
            store_host=self.env.store_host,
            store_port=self.env.store_port,
            prefix=f"rigcheck/{self.env.run_id}/links/",
            host_index=members.index(self.env.rank),
            hosts=hosts,
            local_devices=local,
            device_counts=tuple(len(infos[rank].get("devices") or ["cpu"]) if gpu else 1 for rank in members),
            backend="nccl" if gpu else "gloo",
            sizes=fleet_sizes(profile, gpu),
            step_timeout=step_timeout,
            init_timeout=max(step_timeout, 120.0),
            python=self.request.python,
        )
        statuses = [Status.PASS]
        pair_bytes = self.options.pair_bytes or (64 << 20 if gpu else 4 << 20)
        sampler = start_sampler() if self.request.telemetry else None
        conditions = ConditionsAnnotator(sampler) if sampler is not None else None  # the links' figures are judged too
        self._send(channel, StageStarted(LINKS_STAGE, ",".join(local), os.getpid(), self.request.python))
        try:
            for event in (*fleet_collectives(plan), *pairwise_rounds(plan, pair_bytes, 5 if gpu else 3)):
                if isinstance(event, Measurement) and self.local_run_id is not None:  # as a local run's figures
                    event = annotate_figure(event, self.store, self.local_run_id, local, conditions, local[0])
                self._send(channel, event)
                status = getattr(event, "status", None)
                if isinstance(status, Status):
                    statuses.append(status)
        finally:
            if sampler is not None:
                sampler.stop()
        links = worst(statuses) or Status.PASS
        self._send(channel, StageFinished(LINKS_STAGE, links))
        return strict_code(exit_code_for([links]), statuses, self.request.strict)

    def _send(self, channel: FleetChannel, event: Event) -> None:
        """An event of the fleet part: into this host's own run first, then to rank 0 while its store answers."""
        if self.local_run_id is not None:
            self.store.record(self.local_run_id, event)
        with suppress(Exception):  # a broken channel says so itself (channel.broken), once
            channel.publish(event)

    def refuse(self, why: str) -> None:
        """Tell rank 0 why this agent will not run (it quotes it rather than wait for a host that never comes);
        rank 0 itself ends its fleet run as an error."""
        refuse_on(self.channel, why, self.env.node)
        if self.collector is not None and self.fleet_run_id is not None:
            self.collector.stop()
            self.store.end_run(self.fleet_run_id, "error", EXIT_USAGE, f"rank 0 refused to start: {why}")
        if self.env.rank == 0 and self.channel is not None:  # agents still waiting for the nonce hear it too
            with suppress(Exception):
                refuse_asks(self.channel, why, REFUSAL_ASKS_S)

    def _finish_fleet(self) -> int:
        assert self.collector is not None and self.fleet_run_id is not None
        late = f"rank 0 stopped waiting after {self.options.phase_timeout:g} s (--phase-timeout)"
        wait_s = self.options.phase_timeout + self.options.lost_after
        return finish_fleet(self.store, self.collector, self.fleet_run_id, wait_s, late, self.request.strict)


def finish_fleet(
    store: Store, collector: Collector, fleet_run_id: int, wait_s: float, late: str = "", strict: bool = False
) -> int:
    """Rank 0's end of the fleet run: wait for every agent (or name those still out), then the verdicts across
    hosts, and the run's end; its exit code (with --strict, a WARN fails it: the one rule, report/failures.py)."""
    from rigcheck.engine.fleet.verdicts import fleet_verdicts

    if not collector.wait(wait_s):
        collector.give_up(late or f"rank 0 stopped waiting after {wait_s:g} s")
    collector.stop()
    collector.record_dropped()
    for error in collector.errors[:3]:
        store.record(fleet_run_id, LogLine("fleet", f"reading the agents: {error}", "error"))
    report = store.report(fleet_run_id)
    assert report is not None
    found = fleet_verdicts(report, store.host_fingerprints(fleet_run_id))
    for host, verdict in found:
        store.record(fleet_run_id, verdict, host=host)
    stored = [Status(v["status"]) for v in report["verdicts"] if v["status"] in Status._value2member_map_]
    verdicts = [*stored, *(verdict.status for _, verdict in found)]
    code = strict_code(exit_code_for(verdicts), verdicts, strict)
    if strict:
        store.record_strict(fleet_run_id, code)
    store.end_run(fleet_run_id, "complete", code)
    return code


def fleet_sizes(profile: str, gpu: bool) -> tuple[tuple[int, int], ...]:
    """(bytes, timed calls) for the inter-host collectives: 1 GiB is the figure people compare on GPUs."""
    if gpu:
        return ((16 << 20, 20), (256 << 20, 10), (1 << 30, 5)) if profile != "quick" else ((1 << 30, 5),)
    return ((1 << 20, 5), (16 << 20, 3)) if profile != "quick" else ((1 << 20, 3),)
