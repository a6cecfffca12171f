"""The busiest processes that are not rigcheck's own: what a user would stop to quiet the host.

A scan reads every process, so it runs in the host reader's slow path (every 2 s), not at 10 Hz. The
same scan gives the parent of each process, from which the host reader finds rigcheck's own tree
without a second pass over /proc.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from rigcheck.engine.telemetry.sample import ProcessUse

TOP = 5
MIN_CPUS = 0.05
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


class ProcStat(NamedTuple):
    name: str
    seconds: float  # user + system CPU time used so far, all threads
    ppid: int


Scan = Callable[[], Mapping[int, ProcStat]]


def scan_procfs(proc: Path = Path("/proc")) -> dict[int, ProcStat]:
    """Every process's name, CPU seconds and parent, from /proc/PID/stat."""
    out: dict[int, ProcStat] = {}
    with os.scandir(proc) as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(os.path.join(entry.path, "stat"), "rb") as handle:
                    data = handle.read()
                close = data.rindex(b")")  # the name may hold spaces and brackets
                name = data[data.index(b"(") + 1 : close].decode("utf-8", "replace")
                fields = data[close + 2 :].split()
                seconds = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
                out[int(entry.name)] = ProcStat(name, seconds, int(fields[1]))
            except (OSError, ValueError, IndexError):
                continue  # it ended while we read, or we may not read it
    return out


def scan_psutil(ps: Any) -> dict[int, ProcStat]:
    """The same through psutil, for hosts without /proc."""
    out: dict[int, ProcStat] = {}
    for process in ps.process_iter(["name", "cpu_times", "ppid"]):
        info = process.info
        times = info.get("cpu_times")
        if times is not None:
            out[process.pid] = ProcStat(info.get("name") or "?", times.user + times.system, info.get("ppid") or 0)
    return out


def descendants(root: int, scan: Mapping[int, ProcStat]) -> set[int]:
    """`root` and every process below it."""
    children: dict[int, list[int]] = {}
    for pid, stat in scan.items():
        children.setdefault(stat.ppid, []).append(pid)
    tree, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in tree:
                tree.add(child)
                todo.append(child)
    return tree


class BusiestOthers:
    """`scan()` reads every process; `rank(scan, own)` lists those outside `own` that used at least
    MIN_CPUS since the previous scan, busiest first, at most TOP. The first scan only primes."""

    def __init__(self, scan: Scan, clock: Callable[[], float] = time.monotonic) -> None:
        self._scan = scan
        self.clock = clock
        self._last: Mapping[int, ProcStat] = {}
        self._at: float | None = None
        self._previous: tuple[Mapping[int, ProcStat], float | None] = ({}, None)
        self.last_cost_s = 0.0  # how long the last scan took: it must stay cheap

    def scan(self) -> Mapping[int, ProcStat]:
        started = time.perf_counter()
        current = self._scan()
        self.last_cost_s = time.perf_counter() - started
        self._previous = (self._last, self._at)
        self._last, self._at = current, self.clock()
        return current

    def rank(self, current: Mapping[int, ProcStat], own: Iterable[int]) -> tuple[ProcessUse, ...]:
        last, at = self._previous
        if at is None or self._at is None or self._at <= at:
            return ()
        elapsed = self._at - at
        mine = set(own)
        uses = []
        for pid, stat in current.items():
            if pid in mine:
                continue
            before = last.get(pid)
            # A process born since the last scan (or a reused pid) spent all its time in this interval.
            reborn = before is None or before.name != stat.name or stat.seconds < before.seconds
            cpus = (stat.seconds - (0.0 if reborn or before is None else before.seconds)) / elapsed
            if cpus >= MIN_CPUS:
                uses.append(ProcessUse(pid, stat.name, cpus=round(cpus, 3)))
        uses.sort(key=lambda use: (-(use.cpus or 0.0), use.pid))
        return tuple(uses[:TOP])

    def read(self, own: Iterable[int]) -> tuple[ProcessUse, ...]:
        """Scan and rank in one call, for callers that know their own pids already."""
        return self.rank(self.scan(), own)
