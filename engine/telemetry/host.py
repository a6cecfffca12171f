"""Host readings through psutil: load, per-CPU use, and how much is rigcheck's own versus everyone else's.

psutil keeps cpu_percent state per Process object and per call site: sample from one thread only.
"""

from __future__ import annotations

import os
from typing import Any

import psutil

from .safe import safe
from .sample import HostSample


class HostSource:
    def __init__(self, psutil_module: Any = psutil, root_pid: int | None = None) -> None:
        self.ps = psutil_module
        self.root_pid = root_pid or os.getpid()
        self._procs: dict[int, Any] = {}
        self.ps.cpu_percent(percpu=True)  # the first call only primes the counters
        self.cpus = self.ps.cpu_count() or 1

    def _own_cpus(self) -> tuple[float, tuple[int, ...]]:
        """CPUs' worth of time used since the last call by this process and all its descendants."""
        try:
            root = self._procs.get(self.root_pid) or self.ps.Process(self.root_pid)
            tree = [root, *root.children(recursive=True)]
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return 0.0, ()
        alive: dict[int, Any] = {}
        total = 0.0
        for proc in tree:
            known = self._procs.get(proc.pid, proc)
            try:
                percent = known.cpu_percent(None)
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            alive[proc.pid] = known
            if proc.pid in self._procs:
                total += percent  # a new process's first reading is meaningless
        self._procs = alive
        return total / 100.0, tuple(alive)

    def read(self) -> HostSample:
        per_cpu = tuple(self.ps.cpu_percent(percpu=True))
        own, pids = self._own_cpus()
        load = safe(self.ps.getloadavg)
        freq = safe(self.ps.cpu_freq)
        return HostSample(
            cpus=self.cpus,
            load1=load[0] if load else None,
            busy_cpus=sum(per_cpu) / 100.0,
            own_cpus=min(own, sum(per_cpu) / 100.0) if per_cpu else own,
            per_cpu_pct=per_cpu,
            cpu_mhz=getattr(freq, "current", None) or None,
            temperature_c=self._temperature(),
            own_pids=pids,
        )

    def _temperature(self) -> float | None:
        sensors = safe(getattr(self.ps, "sensors_temperatures", lambda: {})) or {}
        for chip in ("coretemp", "k10temp", "zenpower", "cpu_thermal", "acpitz"):
            readings = [r.current for r in sensors.get(chip, []) if r.current]
            if readings:
                return max(readings)
        return None
