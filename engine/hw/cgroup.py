"""The CPUs this process may use and how much of them: its affinity (taskset), its cgroup's cpuset and CPU
quota (v2 cpu.max; v1 cpu.cfs_quota_us over cpu.cfs_period_us), so contention is judged against the CPUs
rigcheck has rather than the host's. Standard library only; every read is optional: a file that cannot be
read leaves its part unknown (None), never an error.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path("/")
CGROUP_FS = "sys/fs/cgroup"


def parse_cpu_list(text: str | None) -> frozenset[int] | None:
    """ "0-3,8,10-11" as a set of CPU numbers; None where empty or not a CPU list."""
    if not text or not text.strip():
        return None
    cpus: set[int] = set()
    try:
        for part in text.strip().split(","):
            low, _, high = part.strip().partition("-")
            cpus.update(range(int(low), int(high or low) + 1))
    except ValueError:
        return None
    return frozenset(cpus) or None


def format_cpu_list(cpus: frozenset[int]) -> str:
    """The reverse of parse_cpu_list: runs of CPU numbers as "0-3,8"."""
    runs: list[str] = []
    ordered = sorted(cpus)
    start = previous = ordered[0]
    for cpu in [*ordered[1:], None]:
        if cpu is not None and cpu == previous + 1:
            previous = cpu
            continue
        runs.append(str(start) if start == previous else f"{start}-{previous}")
        if cpu is not None:
            start = previous = cpu
    return ",".join(runs)


@dataclass(frozen=True)
class CpuLimits:
    """What bounds this process's CPUs. `quota_file` is where the quota was read, for the user to `cat`;
    `usage_file` is the cgroup's own CPU-time counter (v2 cpu.stat, v1 cpuacct.usage), None where unknown."""

    host_cpus: int
    affinity: frozenset[int] | None = None
    cpuset: frozenset[int] | None = None
    quota_cpus: float | None = None
    quota_file: str | None = None
    usage_file: str | None = None

    @property
    def cpu_set(self) -> frozenset[int] | None:
        """The CPUs this process may run on: its affinity within its cgroup's cpuset."""
        known = [s for s in (self.affinity, self.cpuset) if s]
        if not known:
            return None
        return frozenset.intersection(*known) or known[0]

    @property
    def set_size(self) -> int:
        found = self.cpu_set
        return len(found) if found else self.host_cpus

    @property
    def limited_set(self) -> bool:
        return self.set_size < self.host_cpus

    @property
    def tight_quota(self) -> bool:
        """A quota below the set's CPUs: the quota, not the CPUs, bounds what this process may use."""
        return self.quota_cpus is not None and self.quota_cpus < self.set_size

    @property
    def capacity(self) -> float:
        return min(float(self.set_size), self.quota_cpus if self.tight_quota and self.quota_cpus else math.inf)

    def describe(self) -> str | None:
        """What bounds the CPUs, in words, or None where rigcheck may use all of the host's."""
        parts = []
        found = self.cpu_set
        if self.limited_set and found:
            by = "affinity" if self.affinity and len(self.affinity) == len(found) else "the cgroup cpuset"
            parts.append(f"{len(found)} of {self.host_cpus} CPUs ({format_cpu_list(found)}, set by {by})")
        if self.tight_quota:
            parts.append(f"a cgroup CPU quota of {self.quota_cpus:g} CPUs ({self.quota_file})")
        return "rigcheck may use " + " within ".join(parts) if parts else None


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None


def own_groups(root: Path = ROOT) -> dict[str, str]:
    """This process's cgroup path per controller from /proc/self/cgroup; "" keys the v2 unified group."""
    groups: dict[str, str] = {}
    for line in (_read(root / "proc/self/cgroup") or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            groups[controller] = parts[2]
    return groups


def _chain(base: Path, group: str | None) -> list[Path]:
    """The group's folder and each parent up to the mount; only the mount where the group's path is not
    there (a container that sees the host's path for its own root)."""
    folder = base / (group or "/").lstrip("/")
    if not folder.is_dir():
        return [base] if base.is_dir() else []
    chain = [folder]
    while folder != base and base in folder.parents:
        folder = folder.parent
        chain.append(folder)
    return chain


def _quota_v2(folder: Path) -> float | None:
    words = (_read(folder / "cpu.max") or "").split()
    if len(words) != 2 or words[0] == "max":
        return None
    try:
        quota, period = int(words[0]), int(words[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _quota_v1(folder: Path) -> float | None:
    try:
        quota = int(_read(folder / "cpu.cfs_quota_us") or "-1")
        period = int(_read(folder / "cpu.cfs_period_us") or "0")
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def _tightest(
    chain: list[Path], quota_of: Callable[[Path], float | None], name: str
) -> tuple[float | None, str | None]:
    """The lowest quota of the group and its parents (each bounds everything below it), and its file."""
    best: tuple[float | None, str | None] = (None, None)
    for folder in chain:
        quota = quota_of(folder)
        if quota is not None and (best[0] is None or quota < best[0]):
            best = (quota, str(folder / name))
    return best


def _first(chain: list[Path], *names: str) -> Path | None:
    for folder in chain:
        for name in names:
            if (folder / name).exists():
                return folder / name
    return None


def _affinity() -> frozenset[int] | None:
    getter = getattr(os, "sched_getaffinity", None)
    if getter is None:
        return None
    try:
        return frozenset(getter(0)) or None
    except OSError:
        return None


def read_cpu_limits(
    root: Path = ROOT,
    affinity: Callable[[], frozenset[int] | None] = _affinity,
    host_cpus: int | None = None,
) -> CpuLimits:
    """This process's CPU limits; `root` stands in for / (tests give a fake tree)."""
    host = host_cpus or os.cpu_count() or 1
    groups = own_groups(root)
    fs = root / CGROUP_FS
    if (fs / "cgroup.controllers").exists():  # v2, unified
        chain = _chain(fs, groups.get(""))
        quota, quota_file = _tightest(chain, _quota_v2, "cpu.max")
        cpuset = parse_cpu_list(_read(chain[0] / "cpuset.cpus.effective")) if chain else None
        usage = _first(chain[:1], "cpu.stat")
    else:  # v1: one hierarchy per controller
        cpu_base = next((fs / n for n in ("cpu,cpuacct", "cpu", "cpuacct,cpu") if (fs / n).is_dir()), fs / "cpu")
        chain = _chain(cpu_base, groups.get("cpu"))
        quota, quota_file = _tightest(chain, _quota_v1, "cpu.cfs_quota_us")
        sets = _chain(fs / "cpuset", groups.get("cpuset"))
        found = _first(sets[:1], "cpuset.effective_cpus", "cpuset.cpus")
        cpuset = parse_cpu_list(_read(found)) if found else None
        acct = _chain(fs / "cpuacct", groups.get("cpuacct")) if (fs / "cpuacct").is_dir() else chain
        usage = _first(acct[:1], "cpuacct.usage")
    return CpuLimits(host, affinity(), cpuset, quota, quota_file, str(usage) if usage else None)


def group_cpu_seconds(usage_file: str | None) -> float | None:
    """CPU seconds used so far by every process in the cgroup: v2 cpu.stat's usage_usec, v1 cpuacct.usage (ns)."""
    if not usage_file:
        return None
    text = _read(Path(usage_file))
    if text is None:
        return None
    try:
        if usage_file.endswith("cpu.stat"):
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == "usage_usec":
                    return int(value) / 1e6
            return None
        return int(text) / 1e9
    except ValueError:
        return None
