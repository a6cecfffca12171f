"""Starts one links_worker per rank, follows each rank's answers, and turns them into checked results.

Standard library only (the workers import torch): tests drive it without torch in the test process.
A rank that stops answering ends the run as a hang naming the last rank that answered; every worker
is killed before this returns, so no process outlives the stage. A fleet run (store_host set) starts
only this host's ranks, `first_rank` onward, in a group of `world_size` formed on an existing store.
"""

from __future__ import annotations

import json
import os
import select
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from rigcheck.engine.measure.busbw import busbw, max_across_ranks, size_label
from rigcheck.engine.measure.stats import TimingStats, clocks_disagree


@dataclass(frozen=True)
class Plan:
    """What the ranks run: backend, one device per rank, (bytes, timed calls) per size, collectives."""

    backend: str
    devices: tuple[str, ...]
    sizes: tuple[tuple[int, int], ...]
    collectives: tuple[str, ...]
    warmup: int = 3
    step_timeout: float = 60.0  # seconds without a word from any rank before the run is called hung
    init_timeout: float = 180.0  # importing torch and forming the group, on a busy host
    fault: str = ""  # test hook: 'wrong:R[:COLL]', 'hang:R[:COLL]' or 'die:R[:COLL]'
    python: str = field(default_factory=lambda: sys.executable)
    store_host: str = ""  # a store that exists already (a fleet's); "" forms a local one on 127.0.0.1
    store_port: int = 0
    store_prefix: str = ""  # this group's keys on that store
    first_rank: int = 0  # the global rank of devices[0]
    world_size: int = 0  # every rank of the group, on all hosts; 0: just these devices

    @property
    def world(self) -> int:
        return self.world_size or len(self.devices)

    @property
    def ranks(self) -> tuple[int, ...]:
        """The global ranks this process starts and follows."""
        return tuple(range(self.first_rank, self.first_rank + len(self.devices)))


@dataclass(frozen=True)
class Ready:
    """Every rank formed the group: its backend and the NCCL/RCCL version the ranks report."""

    backend: str
    nccl: str | None
    torch: str
    pids: tuple[int, ...]


@dataclass(frozen=True)
class StepResult:
    collective: str
    size_bytes: int
    ranks: int
    times: tuple[float, ...]  # per call, the slowest rank's seconds
    wrong: int
    wrong_by_rank: dict[int, dict[str, Any]]
    timer: str
    timer_check: str
    timer_reason: str | None
    t_start: float | None = None  # when the first rank began it (time.time)
    wrong_all: int | None = None  # a fleet run: wrong elements on every rank of every host

    @property
    def seconds(self) -> float:
        return statistics.median(self.times)

    @property
    def algbw_gbs(self) -> float:
        return self.size_bytes / self.seconds / 1e9

    @property
    def busbw_gbs(self) -> float:
        return busbw(self.collective, self.ranks, self.size_bytes, self.seconds) / 1e9

    @property
    def label(self) -> str:
        return f"{self.collective} {size_label(self.size_bytes)}"


@dataclass(frozen=True)
class StepSkipped:
    collective: str
    size_bytes: int
    reason: str


@dataclass(frozen=True)
class Failure:
    """The run could not finish: TIMEOUT (a hang), CRASH (a rank died) or FAIL (a rank raised)."""

    status: str
    explanation: str
    numbers: dict[str, Any]


Outcome = Ready | StepResult | StepSkipped | Failure


class Rank:
    """One worker process, its pipe, and the last thing it said."""

    def __init__(self, rank: int, proc: subprocess.Popen[bytes], fd: int) -> None:
        self.rank, self.proc, self.fd = rank, proc, fd
        self.buffer = b""
        self.last_kind, self.last_step, self.last_t = "started", "", time.monotonic()
        self.last_sent = 0.0  # the rank's own clock when it last spoke
        self.progress = 0  # begin/result/skip messages so far: every rank sends the same sequence
        self.closed = False

    def lines(self) -> list[dict[str, Any]]:
        chunk = os.read(self.fd, 65536)
        if not chunk:
            self.closed = True
            return []
        self.buffer += chunk
        *complete, self.buffer = self.buffer.split(b"\n")
        messages = [json.loads(line) for line in complete if line.strip()]
        for message in messages:
            self.last_kind, self.last_t, self.last_sent = message["kind"], time.monotonic(), float(message["t"])
            self.last_step = message.get("step", self.last_step)
            self.progress += message["kind"] in ("begin", "result", "skip")
        return messages

    def words(self) -> str:
        step = f" {self.last_step}" if self.last_step else ""
        known = {
            "begin": f"began{step}",
            "result": f"finished{step}",
            "ready": "joined the group",
            "closing": "closing",
        }
        return known.get(self.last_kind, f"{self.last_kind}{step}")


def _config(plan: Plan, rank: int, port: int) -> str:
    config = {
        "rank": rank,
        "world": plan.world,
        "device": plan.devices[rank - plan.first_rank],
        "backend": plan.backend,
        "port": port,
        "sizes": [list(s) for s in plan.sizes],
        "collectives": list(plan.collectives),
        "warmup": plan.warmup,
        "fault": plan.fault,
        "pg_timeout": plan.step_timeout + 60.0,  # our own watchdog speaks first
    }
    if plan.store_host:
        # Other hosts may join much later than this one: the group's own timeout outlasts our forming watchdog.
        config |= {
            "store_host": plan.store_host,
            "store_port": plan.store_port,
            "store_prefix": plan.store_prefix,
            "pg_timeout": max(plan.step_timeout, plan.init_timeout) + 60.0,
        }
    return json.dumps(config)


def _start(plan: Plan, rank: int, port: int) -> Rank:
    read_fd, write_fd = os.pipe()
    try:
        proc = subprocess.Popen(
            [plan.python, "-m", "rigcheck.engine.stages.links.worker", str(write_fd), _config(plan, rank, port)],
            stdin=subprocess.DEVNULL,
            pass_fds=(write_fd,),
            env=dict(os.environ),  # NCCL_* exactly as the user set them
        )
    finally:
        os.close(write_fd)
    return Rank(rank, proc, read_fd)


def stop_all(ranks: list[Rank]) -> None:
    """SIGKILL every worker and reap it: a rank stuck inside NCCL does not answer SIGTERM."""
    for rank in ranks:
        if rank.proc.poll() is None:
            rank.proc.kill()
    for rank in ranks:
        rank.proc.wait()
        os.close(rank.fd)


def _hang(ranks: list[Rank], quiet_s: float, forming: bool) -> Failure:
    # The rank furthest along is the last that answered where the run stopped (a lagging rank may have
    # spoken later by the clock, still finishing the step before); the ones short of it fell behind.
    latest = max(ranks, key=lambda r: (r.progress, r.last_sent))
    said = "; ".join(f"rank {r.rank} {r.words()}" for r in ranks)
    behind = [r.rank for r in ranks if r.progress < latest.progress]
    what = (
        "forming the group"
        if forming
        else "closing the group"
        if latest.last_kind == "closing"
        else (latest.last_step or "the first collective")
    )
    suspect = f"; rank(s) {', '.join(map(str, behind))} fell behind" if behind else "; every rank is inside it"
    return Failure(
        "TIMEOUT",
        f"{what} hung: no rank answered for {quiet_s:.0f} s; the last rank that answered was rank "
        f"{latest.rank}{suspect} ({said}); all workers were killed",
        {"last_rank": latest.rank, "behind": behind, "step": latest.last_step, "quiet_s": quiet_s},
    )


def _killed_peer(ranks: list[Rank], raised: Rank, wait_s: float = 1.0) -> Rank | None:
    """Another rank killed by a signal, waiting briefly: a peer's death reaches the others as an error."""
    deadline = time.monotonic() + wait_s
    while True:
        for rank in ranks:
            if rank is not raised and rank.proc.poll() is not None and rank.proc.returncode < 0:
                return rank
        if time.monotonic() > deadline:
            return None
        time.sleep(0.05)


def _died(rank: Rank, then: str = "") -> Failure:
    code = rank.proc.returncode
    how = f"died of signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
    return Failure(
        "CRASH",
        f"rank {rank.rank} {how} after it {rank.words()}{then}",
        {"rank": rank.rank, "exit_code": code, "step": rank.last_step},
    )


def _disagreement(answer: dict[str, Any]) -> str | None:
    """Per call at the median where the rank timed each call by both clocks (the CPU), else over the
    whole back-to-back group (device events, with the wall clock around them)."""
    if answer.get("check_times"):
        stats = TimingStats(tuple(answer["times"]), tuple(answer["check_times"]), answer["timer"], answer["check"])
        return stats.disagreement()
    return clocks_disagree(answer["primary_total"], answer["check_total"], answer["timer"], answer["check"])


def _combine(plan: Plan, answers: dict[int, dict[str, Any]], began: float | None) -> StepResult:
    first = answers[min(answers)]
    # A fleet's ranks already hold the slowest time of every rank on every host; a host's own are a subset.
    per_rank = [answers[r].get("times_all", answers[r]["times"]) for r in sorted(answers)]
    reasons = [_disagreement(a) for a in answers.values()]
    wrong = {r: {"wrong": a["wrong"], "first_wrong": a["first_wrong"]} for r, a in answers.items() if a["wrong"]}
    return StepResult(
        first["collective"],
        int(first["bytes"]),
        plan.world,
        tuple(max_across_ranks(per_rank)),
        sum(a["wrong"] for a in answers.values()),
        wrong,
        first["timer"],
        first["check"],
        next((r for r in reasons if r), None),
        began,
        first.get("wrong_all"),
    )


def run_collectives(plan: Plan, cancelled: Callable[[], bool] = lambda: False) -> Generator[Outcome, None, None]:
    """Yield Ready, then a StepResult or StepSkipped per collective and size, or a Failure that ends it."""
    # On a fleet's store every local rank starts at once; locally rank 0 makes the store, then the others join.
    ranks = [_start(plan, r, plan.store_port) for r in plan.ranks] if plan.store_host else [_start(plan, 0, 0)]
    try:
        yield from _follow(plan, ranks, cancelled)
    finally:
        stop_all(ranks)


def _follow(plan: Plan, ranks: list[Rank], cancelled: Callable[[], bool]) -> Iterator[Outcome]:
    pending: dict[str, dict[int, dict[str, Any]]] = {}
    began: dict[str, float] = {}
    ready: dict[int, dict[str, Any]] = {}
    done: set[int] = set()
    local = len(plan.ranks)
    while len(done) < local:
        if cancelled():
            return
        open_ranks = [r for r in ranks if not r.closed]
        readable, _, _ = select.select([r.fd for r in open_ranks], [], [], 0.2)
        for rank in open_ranks:
            if rank.fd not in readable:
                continue
            for message in rank.lines():
                kind = message["kind"]
                if kind == "store":
                    ranks.extend(_start(plan, r, int(message["port"])) for r in range(1, plan.world))
                elif kind == "ready":
                    ready[rank.rank] = message
                    if len(ready) == local:
                        yield Ready(
                            message["backend"],
                            ready[min(ready)].get("nccl"),
                            message["torch"],
                            tuple(ready[r]["pid"] for r in sorted(ready)),
                        )
                elif kind == "error":
                    raised = f"rank {rank.rank} raised during {message.get('step') or 'setup'}: {message['text']}"
                    dead = _killed_peer(ranks, rank)
                    if dead is not None:  # the rank that raised only lost its peer: the dead one is the cause
                        yield _died(dead, f"; then {raised}")
                    else:
                        yield Failure(
                            "FAIL", raised, {"rank": rank.rank, "step": message.get("step"), "error": message["text"]}
                        )
                    return
                elif kind == "begin":
                    began.setdefault(message["step"], float(message["t"]))
                elif kind in ("result", "skip"):
                    answers = pending.setdefault(message["step"], {})
                    answers[rank.rank] = message
                    if len(answers) == local:
                        del pending[message["step"]]
                        yield _outcome(plan, answers, began.pop(message["step"], None))
                elif kind == "done":
                    done.add(rank.rank)
        for rank in ranks:
            if rank.closed and rank.rank not in done:
                rank.proc.wait()
                yield _died(rank)
                return
        quiet = time.monotonic() - max(r.last_t for r in ranks)
        forming = len(ready) < local
        limit = plan.init_timeout if forming else plan.step_timeout
        if quiet > limit:
            yield _hang(ranks, quiet, forming)
            return


def _outcome(plan: Plan, answers: dict[int, dict[str, Any]], began: float | None) -> StepResult | StepSkipped:
    skipped = [a for a in answers.values() if a["kind"] == "skip"]
    if skipped:
        first = skipped[0]
        return StepSkipped(first["step"].partition(" ")[0], int(first.get("bytes", 0)), first["reason"])
    return _combine(plan, answers, began)
