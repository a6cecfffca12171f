"""The links between hosts of a fleet: every GPU of every host in one group on the fleet's store, each
collective checked element by element and timed by the nccl-tests rules, then the hosts two by two.

Every agent calls `fleet_collectives` (then `pairwise_rounds`) at the same moment, after its local
stages. Each starts only its own host's ranks, reusing the links stage's worker and follower; the
fleet's figures come from host 0 alone, so they are not counted once per host. Nothing here imports
torch when imported (the figure checks and the store reads import it when first used).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field, replace
from typing import Any

from rigcheck.engine.events import Event, LogLine, Measurement, Progress, Status, Verdict
from rigcheck.engine.fleet.pairs import STAGE, pair_schedule, pair_verdicts
from rigcheck.engine.fleet.progress import open_store, read_progress, stragglers
from rigcheck.engine.measure.busbw import size_label
from rigcheck.engine.stages.links.collectives import Failure, Plan, Ready, StepResult, StepSkipped, run_collectives

__all__ = ["STAGE", "FleetLinksPlan", "fleet_collectives", "pair_schedule", "pair_verdicts", "pairwise_rounds"]

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter")


@dataclass(frozen=True)
class FleetLinksPlan:
    """One host's part of the fleet's collectives; every host gets the same plan but its host_index and devices."""

    store_host: str
    store_port: int
    prefix: str  # unique per fleet run and per call: the group's keys on the store
    host_index: int
    hosts: tuple[str, ...]  # every host's name, in agent-rank order
    local_devices: tuple[str, ...]  # this host's devices taking part: ("cuda:0", "cuda:1") or ("cpu",)
    device_counts: tuple[int, ...]  # ranks each host contributes, so the global rank offsets are known
    backend: str  # "nccl" or "gloo"
    sizes: tuple[tuple[int, int], ...]  # (bytes, timed calls)
    collectives: tuple[str, ...] = COLLECTIVES
    step_timeout: float = 60.0  # seconds with no word from this host's ranks before the step is called hung
    init_timeout: float = 180.0  # importing torch and forming the group; also how long a round waits for a host
    fault: str = ""  # test hook, as the links stage's: 'wrong:R[:COLL]', 'hang:R[:COLL]', 'die:R[:COLL]', R global
    python: str = field(default_factory=lambda: sys.executable)
    warmup: int = 3

    def __post_init__(self) -> None:
        if len(self.hosts) != len(self.device_counts):
            raise ValueError(f"{len(self.hosts)} hosts but {len(self.device_counts)} device counts")
        if not 0 <= self.host_index < len(self.hosts):
            raise ValueError(f"host_index {self.host_index} is not one of {len(self.hosts)} hosts")
        if len(self.local_devices) != self.device_counts[self.host_index]:
            raise ValueError(
                f"{self.here} brings {len(self.local_devices)} devices but device_counts says "
                f"{self.device_counts[self.host_index]}"
            )
        if not self.prefix:
            raise ValueError("a fleet group needs a prefix of its own on the store")

    @property
    def here(self) -> str:
        return self.hosts[self.host_index]

    @property
    def world(self) -> int:
        return sum(self.device_counts)

    @property
    def offset(self) -> int:
        """The global rank of this host's first device."""
        return sum(self.device_counts[: self.host_index])

    def host_of(self, rank: int) -> str:
        start = 0
        for host, count in zip(self.hosts, self.device_counts, strict=True):
            if rank < start + count:
                return host
            start += count
        return "?"


def _restaged(events: Iterator[Event], old: str, new: str) -> Iterator[Event]:
    """The links stage's figure events under this stage's name, the figure called `new` instead of `old`."""
    for event in events:
        if isinstance(event, Measurement):
            yield replace(event, stage=STAGE, name=new if event.name == old else event.name)
        elif isinstance(event, Verdict) and event.check == f"figure {old}":  # the figure was broken
            yield replace(event, stage=STAGE, check=f"figure {new}", explanation=event.explanation.replace(old, new))
        else:
            yield replace(event, stage=STAGE)  # type: ignore[type-var, arg-type]  # the links stage sends no run events


def figure_events(result: StepResult, device: str, common: dict[str, Any], name: str = "") -> Iterator[Event]:
    """The busbw figure of a step over every rank of the group, checked as the links stage checks its own
    (two clocks, the device's limit), with the wrong elements of every rank of every host in its params."""
    import torch
    from rigcheck.engine.stages.links.stage import step_events

    first = torch.device(device) if device.startswith("cuda") else None
    whole = replace(result, wrong=result.wrong if result.wrong_all is None else result.wrong_all, wrong_by_rank={})
    old = f"{result.label} busbw"
    yield from _restaged(step_events(whole, first, common), old, name or old)


def _checks(plan: FleetLinksPlan, result: StepResult, ranks: tuple[int, ...]) -> Iterator[Verdict]:
    device, label = plan.local_devices[0], _label(result, plan.sizes)
    if not result.wrong_by_rank:
        yield Verdict(
            STAGE,
            label,
            Status.PASS,
            f"{label}: every element right on rank(s) {', '.join(map(str, ranks))} of {plan.here} "
            f"({plan.world} ranks on {len(plan.hosts)} hosts, {plan.backend})",
            {"wrong": 0, "ranks": list(ranks), "bytes": result.size_bytes},
            device=device,
        )
    for rank, bad in sorted(result.wrong_by_rank.items()):
        first = bad["first_wrong"] or {}
        yield Verdict(
            STAGE,
            label,
            Status.FAIL,
            f"{label}: {bad['wrong']} wrong element(s) on rank {rank} ({plan.host_of(rank)}); first at "
            f"{first.get('index')}: got {first.get('got')}, expected {first.get('expected')}",
            {"wrong": bad["wrong"], "rank": rank, "host": plan.host_of(rank), **first},
            device=device,
        )


def _failure(
    failure: Failure,
    plan: FleetLinksPlan,
    prefix: str,
    world: int,
    host_of: Callable[[int], str],
    check: str,
    lead: str,
) -> Verdict:
    """The local follower's failure, told from the fleet's view in the store where it can be read: a host
    whose ranks all wait inside a collective cannot see on its own which rank elsewhere never came."""
    progress = read_progress(plan.store_host, plan.store_port, prefix, world)
    behind, step = stragglers(progress or {}, world)
    step = step or str(failure.numbers.get("step") or "forming the group")
    named = ", ".join(
        f"rank {r} ({host_of(r)}{'' if r in (progress or {}) else ', never reached the store'})" for r in behind
    )
    numbers = dict(failure.numbers) | {"ranks": behind, "hosts": sorted({host_of(r) for r in behind})}
    quiet = float(failure.numbers.get("quiet_s", 0.0))
    if progress is None:
        text = f"{failure.explanation}; the fleet's store could not be read, so only this host's ranks are known"
    elif failure.status != "TIMEOUT":
        where = f"{named} had not answered in {step}" if behind else f"every rank had reached {step}"
        text = f"{failure.explanation}; across the fleet {where}"
    elif behind:
        text = (
            f"{step} hung: {named} did not answer; the other ranks waited inside it, this host's with no word "
            f"for {quiet:.0f} s; this host's workers were killed"
        )
    else:
        text = (
            f"{step} hung on every rank: all {world} ranks are inside it and none finished in {quiet:.0f} s "
            "(the collective itself is stuck); this host's workers were killed"
        )
    return Verdict(
        STAGE, check, Status(failure.status), lead + text, numbers | {"fleet_step": step}, device=plan.local_devices[0]
    )


def _label(result: StepResult, sizes: tuple[tuple[int, int], ...]) -> str:
    """A step's name by the size asked for: the array is trimmed to a multiple of the world, which for
    many ranks would name 1 MiB '1048512 B' and differ between fleets of different sizes."""
    asked = min((s for s, _ in sizes if s >= result.size_bytes), default=result.size_bytes)
    return f"{result.collective} {size_label(asked)}"


def fleet_collectives(plan: FleetLinksPlan, cancelled: Callable[[], bool] = lambda: False) -> Iterator[Event]:
    """This host's part of the fleet's collectives: a check per collective and size (its own ranks'
    elements), and from host 0 the fleet's busbw figure; a hang or death ends it with one verdict."""
    inner = Plan(
        plan.backend,
        plan.local_devices,
        plan.sizes,
        plan.collectives,
        warmup=plan.warmup,
        step_timeout=plan.step_timeout,
        init_timeout=plan.init_timeout,
        fault=plan.fault,
        python=plan.python,
        store_host=plan.store_host,
        store_port=plan.store_port,
        store_prefix=plan.prefix,
        first_rank=plan.offset,
        world_size=plan.world,
    )
    common: dict[str, Any] = {
        "backend": plan.backend,
        "hosts": list(plan.hosts),
        "world": plan.world,
        "devices_per_host": list(plan.device_counts),
        "bound": "link",
    }
    total = len(plan.sizes) * len(plan.collectives)
    done = 0
    yield Progress(STAGE, 0, total, f"joining {plan.world} ranks on {len(plan.hosts)} hosts")
    with closing(run_collectives(inner, cancelled)) as outcomes:
        for outcome in outcomes:
            if isinstance(outcome, Ready):
                common |= {"backend": outcome.backend, "nccl_version": outcome.nccl, "torch": outcome.torch}
                yield LogLine(
                    STAGE, f"{plan.here}: ranks {list(inner.ranks)} of {plan.world} joined; pids {outcome.pids}"
                )
            elif isinstance(outcome, StepSkipped):
                done += 1
                yield Verdict(STAGE, outcome.collective, Status.SKIP, outcome.reason, device=plan.local_devices[0])
            elif isinstance(outcome, StepResult):
                done += 1
                yield Progress(STAGE, done, total, _label(outcome, plan.sizes))
                yield from _checks(plan, outcome, inner.ranks)
                if plan.host_index == 0:
                    name = f"{_label(outcome, plan.sizes)} busbw"
                    yield from figure_events(outcome, plan.local_devices[0], common, name)
            elif isinstance(outcome, Failure):
                yield _failure(outcome, plan, plan.prefix, plan.world, plan.host_of, "collectives", "")
                return


def _pair_fault(plan: FleetLinksPlan, pair_rank: int) -> str:
    """The plan's fault, where it names this host's first rank, as the fault of this host's rank in a pair."""
    kind, _, rest = plan.fault.partition(":")
    target, _, where = rest.partition(":")
    if not plan.fault or not target.isdigit() or int(target) != plan.offset or where not in ("", "all_reduce"):
        return ""
    return f"{kind}:{pair_rank}"


def _round_barrier(
    plan: FleetLinksPlan, store: Any, r: int, waiting_for: set[int], cancelled: Callable[[], bool]
) -> set[int]:
    """Every host, the ones with a bye too, meets here before round r: the rounds stay in step, so a pair
    never waits on a partner still in an earlier round, and a hang or a lost host costs each round at most
    one wait. Returns the hosts that did not come (they are not waited for again)."""
    store.set(f"{r}/{plan.host_index}", "1")
    deadline = time.monotonic() + plan.init_timeout + plan.step_timeout  # late by one hung pair is still in time
    missing = set(waiting_for)
    while missing and time.monotonic() < deadline and not cancelled():
        missing = {h for h in missing if not store.check([f"{r}/{h}"])}
        time.sleep(0.05)
    return missing


def pairwise_rounds(
    plan: FleetLinksPlan, size: int, reps: int, cancelled: Callable[[], bool] = lambda: False
) -> Iterator[Event]:
    """Hosts two by two on their first device, all_reduce of `size` bytes, checked and timed: the lower
    host of each pair yields its figure; a pair that hangs is a TIMEOUT naming both hosts and the round."""
    schedule = pair_schedule(len(plan.hosts))
    expected = set(range(len(plan.hosts))) - {plan.host_index}
    gone: set[int] = set()
    barrier: Any = None
    for r, pairs in enumerate(schedule):
        if cancelled():
            return
        yield Progress(STAGE, r, len(schedule), f"pair round {r}")
        try:
            if barrier is None:  # one client for every round's barrier
                barrier = open_store(plan.store_host, plan.store_port, f"{plan.prefix}/pair/at", plan.init_timeout)
            gone |= _round_barrier(plan, barrier, r, expected - gone, cancelled)
        except Exception as error:  # torch raises its own DistStoreError and RuntimeError
            yield Verdict(
                STAGE,
                "pairs",
                Status.FAIL,
                f"pair round {r}: the fleet's store at {plan.store_host}:{plan.store_port} did not answer ({error})",
                {"round": r},
                device=plan.local_devices[0],
            )
            return
        pair = next((p for p in pairs if plan.host_index in p), None)
        if pair is None:
            yield LogLine(STAGE, f"pair round {r}: {plan.here} has a bye")
            continue
        a, b = pair
        names = f"{plan.hosts[a]}-{plan.hosts[b]}"
        partner = b if plan.host_index == a else a
        if partner in gone:
            yield Verdict(
                STAGE,
                f"pair {names}",
                Status.TIMEOUT,
                f"pair round {r} {names}: {plan.hosts[partner]} did not reach the round in time "
                f"(init_timeout + step_timeout, {plan.init_timeout + plan.step_timeout:.0f} s)",
                {"pair": [plan.hosts[a], plan.hosts[b]], "round": r, "hosts": [plan.hosts[partner]]},
                device=plan.local_devices[0],
            )
            continue
        yield from _pair(plan, r, a, b, size, reps, cancelled)


def _pair(
    plan: FleetLinksPlan, r: int, a: int, b: int, size: int, reps: int, cancelled: Callable[[], bool]
) -> Iterator[Event]:
    me = 0 if plan.host_index == a else 1
    prefix = f"{plan.prefix}/pair/{r}/{a}-{b}"
    pair_hosts = [plan.hosts[a], plan.hosts[b]]
    names = "-".join(pair_hosts)
    inner = Plan(
        plan.backend,
        plan.local_devices[:1],
        ((size, reps),),
        ("all_reduce",),
        warmup=plan.warmup,
        step_timeout=plan.step_timeout,
        init_timeout=plan.init_timeout,
        fault=_pair_fault(plan, me),
        python=plan.python,
        store_host=plan.store_host,
        store_port=plan.store_port,
        store_prefix=prefix,
        first_rank=me,
        world_size=2,
    )
    common = {"backend": plan.backend, "hosts": pair_hosts, "world": 2, "bound": "link", "pair": pair_hosts, "round": r}
    with closing(run_collectives(inner, cancelled)) as outcomes:
        for outcome in outcomes:
            if isinstance(outcome, StepResult):
                for bad in outcome.wrong_by_rank.values():
                    first = bad["first_wrong"] or {}
                    yield Verdict(
                        STAGE,
                        f"pair {names}",
                        Status.FAIL,
                        f"pair round {r} {names}: {bad['wrong']} wrong element(s) on {plan.here}; first at "
                        f"{first.get('index')}: got {first.get('got')}, expected {first.get('expected')}",
                        {"pair": pair_hosts, "round": r, "host": plan.here, "wrong": bad["wrong"], **first},
                        device=plan.local_devices[0],
                    )
                if me == 0:
                    label = f"pair {_label(outcome, inner.sizes)} {names}"
                    params = common | {"busbw_gbs": outcome.busbw_gbs}
                    yield from figure_events(outcome, plan.local_devices[0], params, label)
            elif isinstance(outcome, Failure):
                lead = f"pair round {r} {names}: "
                verdict = _failure(outcome, plan, prefix, 2, lambda k: pair_hosts[k], f"pair {names}", lead)
                yield replace(verdict, numbers=verdict.numbers | {"pair": pair_hosts, "round": r})
