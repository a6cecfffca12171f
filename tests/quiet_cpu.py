"""A CPU that nothing else uses, for the clean cases of tests that judge contention on a busy machine: this
process (every thread, and so every child it starts) is pinned to one CPU, and every other task that may run
there is moved to its other CPUs for the duration (into a cpuset of those CPUs where the cgroup v1 cpuset
hierarchy is writable, which no task can widen its affinity out of; else by each task's affinity), then put
back. rigcheck then judges its figures on the CPU set
it may use (engine/hw/cgroup.py), which is that one quiet CPU, whatever else the host is doing.

The mover is a process of its own, detached (its launcher exits), working on the other CPUs: rigcheck counts
its own process tree's CPU time as its own, and the mover's is not. Moving other users' tasks needs root (or
CAP_SYS_NICE); a task that cannot be moved, or is pinned to that CPU alone, stays, and `others_on_it` names
it: the test then fails saying so, never skips.

    python tests/quiet_cpu.py CPU FOLDER REST PID   # the mover, on CPUs REST (1,2,3): keeps every task but PID's
                                                    # tree off CPU until FOLDER/stop appears
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

PROC = Path("/proc")
RESWEEP_S = 0.1  # a task that widens its own affinity (or a new one from an unmoved parent) is moved again
MOVER_TIMEOUT_S = 600.0  # the mover restores and exits by itself after this, or when its test process is gone


def _tasks() -> Iterator[tuple[int, int]]:
    """(process id, thread id) of every task on the host."""
    for proc in PROC.iterdir():
        if not proc.name.isdigit():
            continue
        try:
            threads = [int(t.name) for t in (proc / "task").iterdir()]
        except OSError:
            continue
        yield from ((int(proc.name), tid) for tid in threads)


def _parent(pid: int) -> int | None:
    try:
        status = (PROC / str(pid) / "status").read_text()
    except OSError:
        return None
    return next((int(line.split()[1]) for line in status.splitlines() if line.startswith("PPid:")), None)


def tree(pid: int) -> set[int]:
    """The process and its descendants."""
    try:
        return {pid, *(child.pid for child in psutil.Process(pid).children(recursive=True))}
    except psutil.Error:
        return {pid}


@dataclass
class Mover:
    """The tasks moved off `cpu` (thread id -> its affinity before, and the same by process)."""

    cpu: int
    rest: frozenset[int]
    own: int  # the test's process: it and its children stay
    moved: dict[int, frozenset[int]] = field(default_factory=dict)
    by_process: dict[int, frozenset[int]] = field(default_factory=dict)
    since: float = field(default_factory=time.time)

    def sweep(self) -> None:
        """Move every task that may run on the CPU to the rest of its CPUs (one pinned to it alone, to `rest`)."""
        ours = tree(self.own)
        for pid, tid in _tasks():
            try:
                now = frozenset(os.sched_getaffinity(tid))
                if self.cpu in now and pid not in ours:
                    os.sched_setaffinity(tid, (now - {self.cpu}) or self.rest)
                    self.moved.setdefault(tid, now)
                    self.by_process.setdefault(pid, now)
            except OSError:
                continue  # a kernel thread bound to the CPU, or gone

    def restore(self) -> None:
        """Each moved task back to its affinity before; a task born meanwhile, which took its affinity from a
        moved ancestor, to that ancestor's (one older than the window, or set since, is left alone)."""
        for pid, tid in _tasks():
            before = self.moved.get(tid) or self.by_process.get(pid)
            if before is None and self._born_since(pid):
                before = self._ancestors_before(pid)
            if before is None:
                continue
            try:
                if frozenset(os.sched_getaffinity(tid)) == ((before - {self.cpu}) or self.rest):
                    os.sched_setaffinity(tid, before)
            except OSError:
                continue

    def _born_since(self, pid: int) -> bool:
        try:
            return psutil.Process(pid).create_time() >= self.since - 1.0
        except psutil.Error:
            return False

    def _ancestors_before(self, pid: int) -> frozenset[int] | None:
        for _ in range(64):
            parent = _parent(pid)
            if not parent:
                return None
            if parent in self.by_process:
                return self.by_process[parent]
            pid = parent
        return None


CPUSET = Path("/sys/fs/cgroup/cpuset")  # cgroup v1's cpuset hierarchy, where it is mounted and writable


class CpusetMover:
    """The same, through a cpuset the mover makes (cgroup v1): every process but the test's tree goes into a
    cpuset of the other CPUs, which a process cannot leave by widening its affinity, and whose children are
    born in it. Each thread's affinity is put back after, since leaving a cpuset resets it."""

    def __init__(self, cpu: int, rest: set[int], own: int, root: Path = CPUSET) -> None:
        self.cpu, self.own, self.root = cpu, own, root
        self.group = root / f"rigcheck-quiet-{os.getpid()}"
        self.group.mkdir()
        (self.group / "cpuset.cpus").write_text(",".join(str(c) for c in sorted(rest)))
        (self.group / "cpuset.mems").write_text((root / "cpuset.mems").read_text())
        self.moved: dict[int, frozenset[int]] = {}  # thread id -> its affinity before

    @staticmethod
    def usable(root: Path = CPUSET) -> bool:
        """A writable cpuset hierarchy with this process in its root (as on a VM; a container may hide it)."""
        try:
            at_root = any(
                line.split(":")[1] == "cpuset" and line.split(":")[2] == "/"
                for line in (PROC / "self" / "cgroup").read_text().splitlines()
            )
        except (OSError, IndexError):
            return False
        return at_root and (root / "cgroup.procs").exists() and os.access(root, os.W_OK)

    def sweep(self) -> None:
        ours = tree(self.own)
        for line in (self.root / "cgroup.procs").read_text().split():
            pid = int(line)
            if pid in ours:
                continue
            try:
                threads = {
                    int(t.name): frozenset(os.sched_getaffinity(int(t.name))) for t in (PROC / line / "task").iterdir()
                }
                (self.group / "cgroup.procs").write_text(line)
            except OSError:
                continue  # a kernel thread, or gone
            for tid, affinity in threads.items():
                self.moved.setdefault(tid, affinity)

    def restore(self) -> None:
        for line in (self.group / "cgroup.procs").read_text().split():
            try:
                (self.root / "cgroup.procs").write_text(line)
                for task in (PROC / line / "task").iterdir():
                    before = self.moved.get(int(task.name))
                    if before is not None:
                        os.sched_setaffinity(int(task.name), before)
            except OSError:
                continue
        for _ in range(50):
            try:
                self.group.rmdir()
                return
            except OSError:
                time.sleep(0.1)


def rescue(folder: Path) -> None:
    """Where the mover did not finish (killed), every process it confined goes back to the root cpuset."""
    group = Path((folder / "group").read_text()) if (folder / "group").exists() else None
    if group is None or not group.exists():
        return
    for line in (group / "cgroup.procs").read_text().split():
        with contextlib.suppress(OSError):
            (group.parent / "cgroup.procs").write_text(line)
    with contextlib.suppress(OSError):
        group.rmdir()


def keep_off(cpu: int, folder: Path, rest: set[int], own: int) -> None:
    """The mover's loop, on the `rest` of the CPUs: sweep until FOLDER/stop appears (or its time is up), then
    put every task back. Through a cpuset where it can, else by each task's affinity."""
    os.sched_setaffinity(0, rest)
    mover: Mover | CpusetMover
    if CpusetMover.usable():
        mover = CpusetMover(cpu, rest, own)
        (folder / "group").write_text(str(mover.group))
    else:
        mover = Mover(cpu, frozenset(rest), own)
    deadline = time.monotonic() + MOVER_TIMEOUT_S
    try:
        mover.sweep()
        (folder / "ready").write_text(type(mover).__name__)
        while not (folder / "stop").exists() and time.monotonic() < deadline and psutil.pid_exists(own):
            time.sleep(RESWEEP_S)
            mover.sweep()
    finally:
        mover.restore()
        (folder / "done").write_text(str(len(mover.moved)))


@dataclass(frozen=True)
class QuietCpu:
    cpu: int

    def others_on_it(self, seconds: float = 1.0) -> list[str]:
        """Tasks outside this process's tree still allowed on the CPU that used CPU time over `seconds`."""
        ours = tree(os.getpid())
        watched = []
        for pid, tid in _tasks():
            try:
                if pid not in ours and self.cpu in os.sched_getaffinity(tid):
                    task = psutil.Process(tid)
                    watched.append((tid, task, sum(task.cpu_times()[:2])))
            except (OSError, psutil.Error):
                continue
        time.sleep(seconds)
        busy = []
        for tid, task, before in watched:
            try:
                used = (sum(task.cpu_times()[:2]) - before) / seconds
                if used >= 0.02:
                    busy.append(f"{task.name()} (tid {tid}, {used:.2f} CPUs)")
            except psutil.Error:
                continue
        return busy


def _cpu_seconds(tid: int) -> float | None:
    try:
        fields = (PROC / str(tid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def least_pinned(cpus: frozenset[int], seconds: float = 0.5) -> int:
    """The CPU with the least load from tasks pinned to it alone (what no mover can take off it), ties to the
    least busy: every other load can be moved."""
    pinned: dict[int, list[int]] = {cpu: [] for cpu in cpus}
    for _, tid in _tasks():
        try:
            affinity = os.sched_getaffinity(tid)
        except OSError:
            continue
        if len(affinity) == 1 and next(iter(affinity)) in pinned:
            pinned[next(iter(affinity))].append(tid)
    before = {tid: _cpu_seconds(tid) for tids in pinned.values() for tid in tids}
    per_cpu = psutil.cpu_percent(interval=seconds, percpu=True)
    load = {}
    for cpu, tids in pinned.items():
        used = [(_cpu_seconds(t) or 0.0) - (before[t] or 0.0) for t in tids if before[t] is not None]
        load[cpu] = (round(sum(used) / seconds, 1), per_cpu[cpu] if cpu < len(per_cpu) else 100.0)
    return min(sorted(cpus), key=lambda cpu: load[cpu])


def _wait_for(path: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def _allowed_once_no_other_quiet_cpu_holds_ours() -> frozenset[int]:
    """The CPUs this process may use. On a host of two or more CPUs where it may use one, another quiet_cpu (a second
    suite beside this one, as root) has moved it off that suite's quiet CPU: it puts it back when its test ends (at
    most MOVER_TIMEOUT_S later), so wait for that rather than fail."""
    deadline = time.monotonic() + MOVER_TIMEOUT_S + 30.0
    allowed = frozenset(os.sched_getaffinity(0))
    while len(allowed) < 2 <= (os.cpu_count() or 1) and time.monotonic() < deadline:
        time.sleep(0.2)
        allowed = frozenset(os.sched_getaffinity(0))
    return allowed


@contextmanager
def quiet_cpu(folder: Path, cpu: int | None = None) -> Iterator[QuietCpu]:
    """Pin this process to one CPU (`cpu`, else the one with least load pinned to it) and keep every other task
    off it.

    Raises RuntimeError where it cannot: a process allowed on one CPU has no other CPU to move the rest to."""
    allowed = _allowed_once_no_other_quiet_cpu_holds_ours()
    threads = [int(t.name) for t in (PROC / "self" / "task").iterdir()]
    if len(allowed) < 2:
        raise RuntimeError(f"this process may use {len(allowed)} CPU: no other CPU to move the rest of the host to")
    chosen = cpu if cpu is not None else least_pinned(allowed)
    if chosen not in allowed:
        raise RuntimeError(f"CPU {chosen} is not one this process may use ({sorted(allowed)})")
    before = {tid: frozenset(os.sched_getaffinity(tid)) for tid in threads}
    folder.mkdir(parents=True, exist_ok=True)
    for tid in threads:
        os.sched_setaffinity(tid, {chosen})
    # detached: the launching shell exits at once, so the mover is no descendant of this process
    rest = ",".join(str(c) for c in sorted(allowed - {chosen}))
    launch = f"{sys.executable} {Path(__file__).resolve()} {chosen} {folder} {rest} {os.getpid()} >{folder}/log 2>&1 &"
    subprocess.run(["sh", "-c", launch], check=True)
    try:
        if not _wait_for(folder / "ready", 60):
            raise RuntimeError(f"the mover did not start: {(folder / 'log').read_text()}")
        yield QuietCpu(chosen)
    finally:
        (folder / "stop").write_text("")
        if not _wait_for(folder / "done", 60):
            rescue(folder)
        for tid, affinity in before.items():
            try:
                os.sched_setaffinity(tid, affinity)
            except OSError:
                continue


if __name__ == "__main__":
    keep_off(int(sys.argv[1]), Path(sys.argv[2]), {int(c) for c in sys.argv[3].split(",")}, int(sys.argv[4]))
