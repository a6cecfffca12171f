"""A SUSPECT reason's total of other processes' load and the processes it names are one computation over
the figure's own samples, and this run's own parents are never named as "other processes"."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
from fakes import FAKE_CLOCK, FakeProcess, FakePsutil, proc_tree
from rigcheck.engine.telemetry.host import HostSource
from rigcheck.engine.telemetry.others import OthersNow, ProcStat, Viewers, rigcheck_ancestors, scan_procfs
from rigcheck.engine.telemetry.sample import HostSample, ProcessUse, Sample
from rigcheck.engine.trust.conditions import cpu_contention, summarise


def samples(stale: tuple[ProcessUse, ...], now: tuple[ProcessUse, ...] | None, others: float) -> list[Sample]:
    """Two seconds of a 2-CPU host whose other processes kept `others` CPUs busy; `stale` is the last scan's
    list (taken before the figure), `now` the same processes read at each sample."""
    host = HostSample(cpus=2, load1=1.0, busy_cpus=others + 1.0, own_cpus=1.0, top_others=stale, others_now=now)
    return [Sample(100.0 + i * 0.1, host) for i in range(20)]


STALE = (ProcessUse(7, "python3", cpus=0.6), ProcessUse(8, "kworker", cpus=0.5), ProcessUse(9, "make", cpus=0.3))
NOW = (ProcessUse(7, "python3", cpus=0.3), ProcessUse(8, "kworker", cpus=0.1), ProcessUse(10, "idle", cpus=0.0))


def test_the_reason_names_the_processes_over_the_figures_own_window_and_they_add_up() -> None:
    conditions = summarise(samples(STALE, NOW, 0.5), None)
    (reason,) = cpu_contention(conditions, 2)
    assert reason.startswith("other processes kept 0.5 of 2 CPUs busy while this figure needed 2: ")
    assert "python3 (pid 7, 0.3 CPUs), kworker (pid 8, 0.1 CPUs), the rest 0.1 CPUs;" in reason
    named = sum(p["cpus"] for p in conditions["host_top_others"])
    assert named <= conditions["host_others_cpus"]  # the list never totals more than the total it explains
    assert "make" not in reason  # busy in the scan before the figure, not during it
    assert "idle" not in reason  # followed, but it used nothing in the window: no name to give


def test_older_samples_without_per_sample_readings_still_name_the_scans_processes() -> None:
    conditions = summarise(samples(STALE[:1], None, 1.0), None)
    (reason,) = cpu_contention(conditions, 2)
    assert "python3 (pid 7, 0.6 CPUs), the rest 0.4 CPUs" in reason


def test_followed_processes_are_read_over_each_samples_interval() -> None:
    seconds = {7: 10.0, 8: 5.0}

    class Reader:
        def __init__(self, pid: int) -> None:
            self.pid = pid

        def seconds(self) -> float:
            if self.pid not in seconds:
                raise ProcessLookupError(self.pid)
            return seconds[self.pid]

    now = OthersNow(Reader)
    scan = {7: ProcStat("python3", 10.0, 1), 8: ProcStat("kworker", 5.0, 1)}
    now.follow((ProcessUse(7, "python3", 0.6), ProcessUse(8, "kworker", 0.5)), scan, at=50.0)
    assert now.read(50.01) == ()  # the scan was read a moment ago: nothing to divide yet
    seconds[7] += 0.03  # over the next 0.1 s: python3 used 0.3 CPUs, kworker nothing
    (python3, kworker) = now.read(50.1)
    assert (python3.pid, python3.cpus, kworker.pid, kworker.cpus) == (7, pytest.approx(0.3), 8, 0.0)
    del seconds[8]  # it ended: no longer followed, never an error
    seconds[7] += 0.01
    assert [(u.pid, u.cpus) for u in now.read(50.2)] == [(7, pytest.approx(0.1))]


def cmdlines(table: dict[int, list[str]]):  # type: ignore[no-untyped-def]
    return lambda pid: table.get(pid)


def test_this_runs_own_parents_up_to_the_highest_rigcheck_are_its_own(tmp_path: Path) -> None:
    procs = {1: ("init", 0), 50: ("bash", 0), 60: ("rigcheck", 0), 70: ("torchrun", 0), 100: ("python", 0)}
    scan = scan_procfs(proc_tree(tmp_path, procs, parents={50: 1, 60: 50, 70: 60, 100: 70}))
    argv = {50: ["bash"], 60: ["/venv/bin/rigcheck", "fleet", "--nproc-per-node", "2"], 70: ["torchrun"]}
    assert rigcheck_ancestors(100, scan, cmdlines(argv)) == {60, 70}  # not the shell above them
    assert rigcheck_ancestors(100, scan, cmdlines({50: ["bash"], 70: ["torchrun"]})) == set()  # no rigcheck above


class TreePsutil(FakePsutil):
    """FakePsutil that also knows the run's parent (pid 60); any other process it does not know has ended."""

    def Process(self, pid: int):  # type: ignore[no-untyped-def]
        if pid == 60:
            return FakeProcess(60, 15.0, name="rigcheck")
        try:
            return super().Process(pid)
        except StopIteration:
            raise psutil.NoSuchProcess(pid) from None


def test_the_host_reader_never_lists_this_runs_parent_as_another_process(tmp_path: Path) -> None:
    """`rigcheck run` above its engine, busy drawing the progress: rigcheck's own, not contention."""
    procs = {1: ("init", 0), 60: ("rigcheck", 0), 100: ("python", 0), 500: ("burn", 0)}
    parents = {60: 1, 100: 60, 500: 1}
    proc = proc_tree(tmp_path, procs, parents)
    viewers = Viewers(cmdlines({60: ["/usr/bin/rigcheck", "run", "matmul"], 100: ["python", "-c", "engine"]}))
    FAKE_CLOCK[0] = 1000.0
    host = HostSource(
        TreePsutil(), root_pid=100, clock=lambda: FAKE_CLOCK[0], others_scan=lambda: scan_procfs(proc), viewers=viewers
    )
    host.read()
    proc_tree(tmp_path, {60: ("rigcheck", 60), 500: ("burn", 200)}, parents)  # over 2 s: 0.3 and 1.0 CPUs
    FAKE_CLOCK[0] += 2.0
    sample = host.read()
    assert [p.name for p in sample.top_others] == ["burn"]
    assert 60 in sample.own_pids
