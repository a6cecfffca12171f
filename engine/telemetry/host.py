"""Host readings through psutil: load, per-CPU use, and how much is rigcheck's own versus everyone else's,
on the host and on the CPUs rigcheck may use (its affinity, cgroup cpuset and CPU quota).

psutil keeps cpu_percent state per Process object and per call site: sample from one thread only.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from rigcheck.engine.hw.cgroup import CpuLimits, group_cpu_seconds, parse_cpu_list, read_cpu_limits
from rigcheck.engine.hw.sysfs import read_int, read_text
from rigcheck.engine.telemetry.others import (
    BusiestOthers,
    OthersNow,
    Scan,
    Viewers,
    descendants,
    rigcheck_ancestors,
    scan_procfs,
    scan_psutil,
)
from rigcheck.engine.telemetry.procfs import CpuBusy, ProcessTicks
from rigcheck.engine.telemetry.procnames import psutil_cmdline
from rigcheck.engine.telemetry.rapl import POWERCAP, RaplPower
from rigcheck.engine.telemetry.safe import safe
from rigcheck.engine.telemetry.sample import HostSample, ProcessUse

CPU_SYSFS = Path("/sys/devices/system/cpu")


class HostSource:
    """`track(pid)` registers a stage child at once; the full descendant scan and the scan for the
    busiest other processes (costly: they read all of /proc) and the slow sensors (temperature,
    frequency, package power) refresh only every `slow_every_s`.
    On Linux with the real psutil the 10 Hz part reads /proc directly (see procfs.py)."""

    def __init__(
        self,
        psutil_module: Any = psutil,
        root_pid: int | None = None,
        slow_every_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
        powercap_root: Path = POWERCAP,
        cpu_root: Path = CPU_SYSFS,
        others_scan: Scan | None = None,
        cpu_limits: CpuLimits | None = None,
        viewers: Viewers | None = None,
    ) -> None:
        self.ps = psutil_module
        self.clock = clock
        self.root_pid = root_pid or os.getpid()
        self.slow_every_s = slow_every_s
        self._tracked: set[int] = set()
        self._tree: set[int] = set()
        self._slow_at = float("-inf")
        self._slow: tuple[float | None, float | None] = (None, None)
        self._top: tuple[ProcessUse, ...] = ()
        self._power: float | None = None
        self.cpus = self.ps.cpu_count() or 1
        self._fast = psutil_module is psutil and os.path.exists("/proc/stat")
        if others_scan is None:
            others_scan = scan_procfs if self._fast else lambda: scan_psutil(self.ps)
        self.others = BusiestOthers(others_scan, clock)
        self.viewers = viewers or (Viewers() if self._fast else Viewers(lambda pid: psutil_cmdline(self.ps, pid)))
        self._viewers: set[int] = set()
        self._ancestors: set[int] | None = None  # this run's own parents, found at the first scan
        self.others_now = OthersNow(ProcessTicks if self._fast else lambda pid: _PsutilSeconds(self.ps, pid))
        if cpu_limits is None:
            cpu_limits = read_cpu_limits(host_cpus=self.cpus) if self._fast else CpuLimits(self.cpus)
        self.limits = cpu_limits
        self._set_positions = _set_positions(cpu_limits, cpu_root, self.cpus)
        self._group_last: tuple[float, float] | None = None
        self.rapl = RaplPower(powercap_root, clock)
        self.cpu_max_mhz = cpu_max_mhz(self.ps, cpu_root)
        self._busy = CpuBusy() if self._fast else None
        if self._busy is None:
            self.ps.cpu_percent(percpu=True)  # the first call only primes the counters
        self._readers: dict[int, Any] = {}
        self._last: dict[int, tuple[float, float]] = {}  # pid -> (cpu seconds, wall time)

    def track(self, pid: int) -> None:
        self._tracked.add(pid)

    def _refresh_slow(self) -> None:
        """Every `slow_every_s`: one scan of all processes gives rigcheck's own tree (from the
        parents) and the busiest others; then the slow sensors."""
        scan = safe(self.others.scan)
        if scan and self.root_pid in scan:
            self._tree = descendants(self.root_pid, scan)
        else:
            self._refresh_tree()
        self._viewers = (safe(self.viewers.find, scan) or set()) if scan else set()
        if self._ancestors is None and scan and self.root_pid in scan:
            self._ancestors = safe(rigcheck_ancestors, self.root_pid, scan, self.viewers.cmdline) or set()
        own = self._tree | self._tracked | self._viewers | (self._ancestors or set())
        self._top = (safe(self.others.rank, scan, own) or ()) if scan else ()
        safe(self.others_now.follow, self._top, scan or {}, self.others.scanned_at if scan else None)
        freq = safe(self.ps.cpu_freq)
        self._slow = (getattr(freq, "current", None) or None, self._temperature())
        self._power = safe(self.rapl.read)

    def _refresh_tree(self) -> None:
        try:
            root = self.ps.Process(self.root_pid)
            self._tree = {self.root_pid, *(child.pid for child in root.children(recursive=True))}
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            self._tree = set()

    def _cpu_seconds(self, pid: int) -> float:
        reader: Any = self._readers.get(pid)
        if reader is None:
            reader = ProcessTicks(pid) if self._fast else self.ps.Process(pid)
            self._readers[pid] = reader
        if self._fast:
            return reader.seconds()
        times = reader.cpu_times()
        return times.user + times.system

    def _own_cpus(self) -> tuple[float, tuple[int, ...]]:
        """CPUs' worth of time used since the last call by this process and its descendants."""
        now = self.clock()
        total = 0.0
        alive = []
        for pid in sorted(self._tree | self._tracked | self._viewers | (self._ancestors or set())):
            try:
                seconds = self._cpu_seconds(pid)
            except (OSError, psutil.Error):
                self._forget(pid)
                continue
            alive.append(pid)
            last = self._last.get(pid)
            if last is not None and now > last[1]:
                total += (seconds - last[0]) / (now - last[1])  # a new process's first reading only primes
            self._last[pid] = (seconds, now)
        return total, tuple(alive)

    def _forget(self, pid: int) -> None:
        self._tracked.discard(pid)
        self._tree.discard(pid)
        self._viewers.discard(pid)
        if self._ancestors:
            self._ancestors.discard(pid)
        self._last.pop(pid, None)
        reader = self._readers.pop(pid, None)
        if reader is not None and hasattr(reader, "close"):
            reader.close()

    def read(self) -> HostSample:
        now = self.clock()
        if now - self._slow_at >= self.slow_every_s:
            self._slow_at = now
            self._refresh_slow()
        per_cpu = self._busy.percent() if self._busy else tuple(self.ps.cpu_percent(percpu=True))
        own, pids = self._own_cpus()
        load = safe(os.getloadavg) if self._fast else safe(self.ps.getloadavg)
        busy = sum(per_cpu) / 100.0
        limits = self.limits
        set_busy = None
        if self._set_positions is not None and per_cpu:
            set_busy = sum(per_cpu[i] for i in self._set_positions if i < len(per_cpu)) / 100.0
        return HostSample(
            cpus=self.cpus,
            load1=load[0] if load else None,
            busy_cpus=busy,
            own_cpus=min(own, busy) if per_cpu else own,
            per_cpu_pct=per_cpu,
            cpu_mhz=self._slow[0],
            temperature_c=self._slow[1],
            own_pids=pids,
            top_others=self._top,
            others_now=safe(self.others_now.read, self.clock()) or (),
            cpu_max_mhz=self.cpu_max_mhz,
            package_power_w=self._power,
            set_cpus=limits.set_size if limits.limited_set else None,
            set_busy_cpus=set_busy,
            quota_cpus=limits.quota_cpus if limits.tight_quota else None,
            group_busy_cpus=self._group_busy(now) if limits.tight_quota else None,
            cpu_limit=limits.describe(),
        )

    def _group_busy(self, now: float) -> float | None:
        """CPUs' worth used by every process in rigcheck's cgroup since the last reading."""
        seconds = group_cpu_seconds(self.limits.usage_file)
        if seconds is None:
            return None
        last, self._group_last = self._group_last, (seconds, now)
        if last is None or now <= last[1]:
            return None
        return max(0.0, (seconds - last[0]) / (now - last[1]))

    def _temperature(self) -> float | None:
        sensors = safe(getattr(self.ps, "sensors_temperatures", lambda: {})) or {}
        for chip in ("coretemp", "k10temp", "zenpower", "cpu_thermal", "acpitz"):
            readings = [r.current for r in sensors.get(chip, []) if r.current]
            if readings:
                return max(readings)
        return None


def _set_positions(limits: CpuLimits, cpu_root: Path, cpus: int) -> tuple[int, ...] | None:
    """Where the CPUs rigcheck may use sit in the per-CPU list (which lists online CPUs only, in order);
    None where rigcheck may use every CPU."""
    found = limits.cpu_set
    if not limits.limited_set or not found:
        return None
    online = sorted(parse_cpu_list(read_text(cpu_root / "online")) or range(cpus))
    return tuple(position for position, cpu in enumerate(online) if cpu in found)


def cpu_max_mhz(ps: Any, cpu_root: Path = CPU_SYSFS) -> float | None:
    """The CPU's top frequency: psutil's, else cpufreq's cpuinfo_max_freq (kHz); None on VMs without either."""
    freq = safe(ps.cpu_freq)
    top = getattr(freq, "max", None)
    if top:
        return float(top)
    khz = read_int(cpu_root / "cpu0" / "cpufreq" / "cpuinfo_max_freq")
    return khz / 1000.0 if khz is not None else None


class _PsutilSeconds:
    """A process's CPU seconds through psutil, for hosts without /proc."""

    def __init__(self, ps: Any, pid: int) -> None:
        self.process = ps.Process(pid)

    def seconds(self) -> float:
        times = self.process.cpu_times()
        return float(times.user + times.system)
