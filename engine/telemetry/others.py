"""The busiest processes that are not rigcheck's own: what a user would stop to quiet the host.

A scan reads every process, so it runs in the host reader's slow path (every 2 s), not at 10 Hz.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from .sample import ProcessUse

TOP = 5
MIN_CPUS = 0.05
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

Scan = Callable[[], dict[int, tuple[str, float]]]  # pid -> (name, CPU seconds used so far)


def scan_procfs(proc: Path = Path("/proc")) -> dict[int, tuple[str, float]]:
    """Every process's name and user + system CPU seconds, from /proc/PID/stat (all its threads)."""
    out: dict[int, tuple[str, float]] = {}
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
                out[int(entry.name)] = (name, (int(fields[11]) + int(fields[12])) / CLOCK_TICKS)
            except (OSError, ValueError, IndexError):
                continue  # it ended while we read, or we may not read it
    return out


def scan_psutil(ps: Any) -> dict[int, tuple[str, float]]:
    """The same through psutil, for hosts without /proc."""
    out: dict[int, tuple[str, float]] = {}
    for process in ps.process_iter(["name", "cpu_times"]):
        times = process.info.get("cpu_times")
        if times is not None:
            out[process.pid] = (process.info.get("name") or "?", times.user + times.system)
    return out


class BusiestOthers:
    """`read(own)` lists the processes outside `own` that used at least MIN_CPUS since the previous
    call, busiest first, at most TOP. The first call only primes."""

    def __init__(self, scan: Scan, clock: Callable[[], float] = time.monotonic) -> None:
        self.scan = scan
        self.clock = clock
        self._last: dict[int, tuple[str, float]] = {}
        self._at: float | None = None
        self.last_cost_s = 0.0  # how long the last scan took: it must stay cheap

    def read(self, own: Iterable[int]) -> tuple[ProcessUse, ...]:
        started = time.perf_counter()
        now, current = self.clock(), self.scan()
        self.last_cost_s = time.perf_counter() - started
        last, at = self._last, self._at
        self._last, self._at = current, now
        if at is None or now <= at:
            return ()
        elapsed = now - at
        mine = set(own)
        uses = []
        for pid, (name, seconds) in current.items():
            if pid in mine:
                continue
            before = last.get(pid)
            # A process born since the last scan (or a reused pid) spent all its time in this interval.
            reborn = before is None or before[0] != name or seconds < before[1]
            used = seconds - (0.0 if reborn or before is None else before[1])
            cpus = used / elapsed
            if cpus >= MIN_CPUS:
                uses.append(ProcessUse(pid, name, cpus=round(cpus, 3)))
        uses.sort(key=lambda use: (-(use.cpus or 0.0), use.pid))
        return tuple(uses[:TOP])
