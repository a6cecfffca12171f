"""The busiest processes that are not rigcheck's own: what a user would stop to quiet the host.

A scan reads every process, so it runs in the host reader's slow path (every 2 s), not at 10 Hz. The
same scan gives the parent of each process, from which the host reader finds rigcheck's own tree
without a second pass over /proc. rigcheck's viewers (`follow`, the app, `serve` and its tabs, `monitor`)
are rigcheck's own too, though no descendants of the run: they are known by their command line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from rigcheck.engine.telemetry.procnames import process_cmdline
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


def stable_name(name: str) -> str:
    """A process's name as it stays: a kernel worker renames itself after the work it runs (kworker/u8:3-writeback,
    then kworker/u8:3-events), which read as a new process charged its whole life's CPU time in one interval."""
    return name.split("-", 1)[0] if name.startswith("kworker/") else name


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

    @property
    def scanned_at(self) -> float | None:
        """When the last scan was read, by `clock`."""
        return self._at

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
            reborn = (
                before is None or stable_name(before.name) != stable_name(stat.name) or stat.seconds < before.seconds
            )
            cpus = (stat.seconds - (0.0 if reborn or before is None else before.seconds)) / elapsed
            if cpus >= MIN_CPUS:
                uses.append(ProcessUse(pid, stat.name, cpus=round(cpus, 3)))
        uses.sort(key=lambda use: (-(use.cpus or 0.0), use.pid))
        return tuple(uses[:TOP])

    def read(self, own: Iterable[int]) -> tuple[ProcessUse, ...]:
        """Scan and rank in one call, for callers that know their own pids already."""
        return self.rank(self.scan(), own)


VIEWER_COMMANDS = frozenset({"follow", "app", "serve", "monitor"})
ENTRY_MODULES = frozenset({"rigcheck", "rigcheck.tui.cli"})
HELP_WORDS = frozenset({"-h", "--help", "--version"})
Cmdline = Callable[[int], list[str] | None]


def _basename(word: str) -> str:
    return word.replace("\\", "/").rsplit("/", 1)[-1]


def rigcheck_arguments(argv: list[str]) -> list[str] | None:
    """The arguments after rigcheck's entry point (the `rigcheck` script or binary, or `python -m
    rigcheck.tui.cli`), or None where this is not rigcheck's command line."""
    if not argv:
        return None
    first = _basename(argv[0])
    if first == "rigcheck":
        return argv[1:]
    if not first.startswith(("python", "pypy")):
        return None
    for index, word in enumerate(argv[1:6], start=1):
        if word == "-m":
            module = argv[index + 1] if index + 1 < len(argv) else ""
            return argv[index + 2 :] if module in ENTRY_MODULES else None
        if not word.startswith("-"):  # the script the interpreter runs (a shebang's argv)
            return argv[index + 1 :] if _basename(word) == "rigcheck" else None
    return None


def is_viewer_command(argv: list[str]) -> bool:
    """A rigcheck process that only watches: `follow`, `app` (also bare `rigcheck`), `serve` or `monitor`."""
    args = rigcheck_arguments(argv)
    if args is None:
        return False
    while args and (args[0] == "--store" or args[0].startswith("--store=")):
        args = args[2:] if args[0] == "--store" else args[1:]
    if not args:
        return True  # `rigcheck` alone opens the app
    if args[0].startswith("-"):
        return args[0] not in HELP_WORDS  # `rigcheck --device cuda:0` opens the app
    return args[0] in VIEWER_COMMANDS


class Viewers:
    """rigcheck's viewers among a scan's processes. Only interpreters and `rigcheck` binaries have their
    command line read, once per process: a process that ended or is a zombie reads as no viewer."""

    NAMES = ("python", "pypy", "rigcheck")

    def __init__(self, cmdline: Cmdline = process_cmdline) -> None:
        self.cmdline = cmdline
        self._known: dict[int, tuple[str, float, bool]] = {}  # pid -> (name, CPU seconds, viewer)

    def find(self, scan: Mapping[int, ProcStat]) -> set[int]:
        known: dict[int, tuple[str, float, bool]] = {}
        for pid, stat in scan.items():
            if not stat.name.startswith(self.NAMES):
                continue
            before = self._known.get(pid)
            if before is not None and before[0] == stat.name and before[1] <= stat.seconds:
                viewer = before[2]  # the same process as at the last scan
            else:
                try:
                    argv = self.cmdline(pid)
                except Exception:  # a reader that fails on a vanished process is a gap, never an error
                    argv = None
                viewer = bool(argv) and is_viewer_command(argv or [])
            known[pid] = (stat.name, stat.seconds, viewer)
        self._known = known
        return {pid for pid, (_, _, viewer) in known.items() if viewer}


def rigcheck_ancestors(root: int, scan: Mapping[int, ProcStat], cmdline: Cmdline = process_cmdline) -> set[int]:
    """The processes above `root` up to the highest one that is rigcheck (`rigcheck fleet` above torchrun
    above an agent, `rigcheck run` above its engine): this run's own parents, never "other processes".
    A shell or a scheduler above them is not rigcheck's, and neither is anything when no ancestor is."""
    chain: list[int] = []
    pid = scan[root].ppid if root in scan else 0
    while pid > 1 and pid in scan and pid not in chain:
        chain.append(pid)
        pid = scan[pid].ppid
    top = -1
    for index, ancestor in enumerate(chain):
        try:
            argv = cmdline(ancestor)
        except Exception:  # gone while we read: a gap, never an error
            argv = None
        if argv and rigcheck_arguments(argv) is not None:
            top = index
    return set(chain[: top + 1])


class SecondsReader(Protocol):
    def seconds(self) -> float: ...


MIN_TICK_S = 0.05  # a reading this soon after the last (the scan that primed it) would divide noise by nothing


class OthersNow:
    """The busiest other processes of the last scan, read again at every host sample: their CPU use over
    the same interval as the host's busy time, so that a figure's named processes and its total of other
    processes' load are one computation over the figure's own window (the scan is up to 2 s old)."""

    def __init__(self, open_reader: Callable[[int], SecondsReader]) -> None:
        self.open_reader = open_reader
        self._names: dict[int, str] = {}
        self._readers: dict[int, SecondsReader] = {}
        self._last: dict[int, tuple[float, float]] = {}  # pid -> (CPU seconds, when)

    def follow(self, top: Iterable[ProcessUse], scan: Mapping[int, ProcStat], at: float | None) -> None:
        """Follow these processes from now on, primed from the scan that found them (taken at `at`)."""
        names = {use.pid: use.name for use in top}
        for pid in set(self._readers) - set(names):
            self._drop(pid)
        for pid in names:
            if pid not in self._last and pid in scan and at is not None:
                self._last[pid] = (scan[pid].seconds, at)
        self._names = names

    def _drop(self, pid: int) -> None:
        self._names.pop(pid, None)
        self._last.pop(pid, None)
        reader = self._readers.pop(pid, None)
        close = getattr(reader, "close", None)
        if close is not None:
            close()

    def read(self, now: float) -> tuple[ProcessUse, ...]:
        """Each followed process's CPUs' worth since its last reading, busiest first (zero included: it is
        still followed)."""
        uses = []
        for pid, name in list(self._names.items()):
            try:
                reader = self._readers.get(pid) or self._readers.setdefault(pid, self.open_reader(pid))
                seconds = reader.seconds()
            except Exception:  # it ended, or may not be read: no longer followed
                self._drop(pid)
                continue
            last = self._last.get(pid)
            if last is not None and now - last[1] < MIN_TICK_S:
                continue
            self._last[pid] = (seconds, now)
            if last is not None:
                uses.append(ProcessUse(pid, name, cpus=round(max(0.0, seconds - last[0]) / (now - last[1]), 3)))
        uses.sort(key=lambda use: (-(use.cpus or 0.0), use.pid))
        return tuple(uses)
