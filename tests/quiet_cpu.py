"""A CPU that nothing else uses, for the clean cases of tests that judge contention on a busy machine: this
process (every thread, and so every child it starts) is pinned to one CPU, and every other task that may run
there is moved to its other CPUs for the duration, then put back. rigcheck then judges its figures on the CPU set
it may use (engine/hw/cgroup.py), which is that one quiet CPU, whatever else the host is doing.

The mover is a process of its own, detached (its launcher exits), working on the other CPUs: rigcheck counts
its own process tree's CPU time as its own, and the mover's is not. Moving other users' tasks needs root (or
CAP_SYS_NICE); a task that cannot be moved, or is pinned to that CPU alone, stays, and `others_on_it` names
it: the test then fails saying so, never skips.

    python tests/quiet_cpu.py CPU FOLDER REST   # the mover, on CPUs REST (1,2,3): keeps tasks off CPU until FOLDER/stop
"""

from __future__ import annotations

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
MOVER_TIMEOUT_S = 600.0  # the mover restores and exits by itself after this, should its test never say stop


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


@dataclass
class Mover:
    """The tasks moved off `cpu` (thread id -> its affinity before, and the same by process)."""

    cpu: int
    moved: dict[int, frozenset[int]] = field(default_factory=dict)
    by_process: dict[int, frozenset[int]] = field(default_factory=dict)
    since: float = field(default_factory=time.time)

    def sweep(self) -> None:
        """Move every task that may run on the CPU, and on others too, to the rest of its CPUs."""
        for pid, tid in _tasks():
            try:
                now = frozenset(os.sched_getaffinity(tid))
                rest = now - {self.cpu}
                if self.cpu in now and rest:  # a task pinned to the CPU alone is the test's, or cannot move
                    os.sched_setaffinity(tid, rest)
                    self.moved.setdefault(tid, now)
                    self.by_process.setdefault(pid, now)
            except OSError:
                continue

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
                if frozenset(os.sched_getaffinity(tid)) == before - {self.cpu}:
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


def keep_off(cpu: int, folder: Path, rest: set[int]) -> None:
    """The mover's loop, on the `rest` of the CPUs: sweep until FOLDER/stop appears (or its time is up), then
    put every task back."""
    os.sched_setaffinity(0, rest)
    mover = Mover(cpu)
    mover.sweep()
    (folder / "ready").write_text(str(os.getpid()))
    deadline = time.monotonic() + MOVER_TIMEOUT_S
    try:
        while not (folder / "stop").exists() and time.monotonic() < deadline:
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
        own = psutil.Process()
        ours = {own.pid, *(child.pid for child in own.children(recursive=True))}
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


def least_busy(cpus: frozenset[int], seconds: float = 0.5) -> int:
    per_cpu = psutil.cpu_percent(interval=seconds, percpu=True)
    return min(sorted(cpus), key=lambda c: per_cpu[c] if c < len(per_cpu) else 100.0)


def _wait_for(path: Path, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@contextmanager
def quiet_cpu(folder: Path, cpu: int | None = None) -> Iterator[QuietCpu]:
    """Pin this process to one CPU (`cpu`, else the least busy it may use) and keep every other task off it.

    Raises RuntimeError where it cannot: a process allowed on one CPU has no other CPU to move the rest to."""
    threads = [int(t.name) for t in (PROC / "self" / "task").iterdir()]
    allowed = frozenset(os.sched_getaffinity(0))
    if len(allowed) < 2:
        raise RuntimeError(f"this process may use {len(allowed)} CPU: no other CPU to move the rest of the host to")
    chosen = cpu if cpu is not None else least_busy(allowed)
    if chosen not in allowed:
        raise RuntimeError(f"CPU {chosen} is not one this process may use ({sorted(allowed)})")
    before = {tid: frozenset(os.sched_getaffinity(tid)) for tid in threads}
    folder.mkdir(parents=True, exist_ok=True)
    for tid in threads:
        os.sched_setaffinity(tid, {chosen})
    # detached: the launching shell exits at once, so the mover is no descendant of this process
    rest = ",".join(str(c) for c in sorted(allowed - {chosen}))
    launch = f"{sys.executable} {Path(__file__).resolve()} {chosen} {folder} {rest} >{folder}/log 2>&1 &"
    subprocess.run(["sh", "-c", launch], check=True)
    try:
        if not _wait_for(folder / "ready", 60):
            raise RuntimeError(f"the mover did not start: {(folder / 'log').read_text()}")
        yield QuietCpu(chosen)
    finally:
        (folder / "stop").write_text("")
        _wait_for(folder / "done", 60)
        for tid, affinity in before.items():
            try:
                os.sched_setaffinity(tid, affinity)
            except OSError:
                continue


if __name__ == "__main__":
    keep_off(int(sys.argv[1]), Path(sys.argv[2]), {int(c) for c in sys.argv[3].split(",")})
