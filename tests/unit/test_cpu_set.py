"""Issue 20, items 4 and 6: contention is judged on the CPUs rigcheck may use (affinity, cgroup cpuset and
quota), a process busy inside that set for the whole window always counts, `--wait-quiet` uses the same
rule, and rigcheck's own viewers are not other processes."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from fakes import FAKE_CLOCK, FakePsutil, FakeSampler, proc_tree
from rigcheck.engine.events import Measurement
from rigcheck.engine.hw.cgroup import (
    CpuLimits,
    format_cpu_list,
    group_cpu_seconds,
    parse_cpu_list,
    read_cpu_limits,
)
from rigcheck.engine.telemetry.host import HostSource
from rigcheck.engine.telemetry.others import Viewers, is_viewer_command, scan_procfs
from rigcheck.engine.telemetry.procnames import process_cmdline
from rigcheck.engine.telemetry.sample import HostSample, ProcessUse, Sample
from rigcheck.engine.trust.conditions import DEFAULT_POLICY, judge, summarise
from rigcheck.engine.trust.contention import others_share
from rigcheck.engine.trust.quiet import others_busy, wait_quiet

NEXT = "; next: stop them, or rerun with `--wait-quiet`"

# -- reading the limits --


def cgroup_v2(root: Path, group: str, files: dict[str, str], parent: dict[str, str] | None = None) -> Path:
    fs = root / "sys/fs/cgroup"
    (fs / group).mkdir(parents=True)
    (fs / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    for name, text in files.items():
        (fs / group / name).write_text(text + "\n")
    for name, text in (parent or {}).items():
        (fs / group).parent.joinpath(name).write_text(text + "\n")
    (root / "proc/self").mkdir(parents=True)
    (root / "proc/self/cgroup").write_text(f"0::/{group}\n")
    return root


def test_cpu_lists_parse_and_print() -> None:
    assert parse_cpu_list("0-3,8,10-11\n") == frozenset({0, 1, 2, 3, 8, 10, 11})
    assert parse_cpu_list("") is None and parse_cpu_list("x-y") is None and parse_cpu_list(None) is None
    assert format_cpu_list(frozenset({0, 1, 2, 3, 8, 10, 11})) == "0-3,8,10-11"


def test_a_v2_quota_and_cpuset_are_read_and_the_tightest_ancestor_wins(tmp_path: Path) -> None:
    root = cgroup_v2(
        tmp_path,
        "box/job",
        {"cpu.max": "150000 100000", "cpuset.cpus.effective": "0-3", "cpu.stat": "usage_usec 2500000\nuser_usec 1"},
        parent={"cpu.max": "max 100000"},
    )
    limits = read_cpu_limits(root, affinity=lambda: frozenset(range(128)), host_cpus=128)
    assert limits.quota_cpus == 1.5 and limits.cpuset == frozenset(range(4)) and limits.set_size == 4
    assert limits.quota_file == str(root / "sys/fs/cgroup/box/job/cpu.max")
    assert limits.capacity == 1.5 and limits.tight_quota and limits.limited_set
    assert limits.describe() == (
        f"rigcheck may use 4 of 128 CPUs (0-3, set by the cgroup cpuset) within a cgroup CPU quota of 1.5 CPUs "
        f"({limits.quota_file})"
    )
    assert group_cpu_seconds(limits.usage_file) == 2.5
    (root / "sys/fs/cgroup/box/cpu.max").write_text("100000 100000\n")  # the parent's is tighter
    assert read_cpu_limits(root, affinity=lambda: None, host_cpus=128).quota_cpus == 1.0


def test_a_v1_quota_is_quota_over_period_and_no_quota_is_none(tmp_path: Path) -> None:
    fs = tmp_path / "sys/fs/cgroup"
    for folder, files in {
        "cpu,cpuacct/docker/abc": {"cpu.cfs_quota_us": "150000", "cpu.cfs_period_us": "100000", "cpuacct.usage": "3e"},
        "cpuset/docker/abc": {"cpuset.effective_cpus": "0-1"},
    }.items():
        (fs / folder).mkdir(parents=True)
        for name, text in files.items():
            (fs / folder / name).write_text(text + "\n")
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("4:cpu,cpuacct:/docker/abc\n3:cpuset:/docker/abc\n0::/\n")
    limits = read_cpu_limits(tmp_path, affinity=lambda: frozenset({0, 1}), host_cpus=8)
    assert limits.quota_cpus == 1.5 and limits.cpu_set == frozenset({0, 1}) and limits.capacity == 1.5
    assert limits.describe() is not None and "set by affinity" in limits.describe()  # type: ignore[operator]
    assert group_cpu_seconds(limits.usage_file) is None  # an unreadable counter is unknown, not an error
    (fs / "cpu,cpuacct/docker/abc/cpu.cfs_quota_us").write_text("-1\n")
    assert read_cpu_limits(tmp_path, affinity=lambda: None, host_cpus=8).quota_cpus is None


def test_a_host_without_cgroup_files_has_only_its_affinity(tmp_path: Path) -> None:
    limits = read_cpu_limits(tmp_path, affinity=lambda: frozenset({2, 3}), host_cpus=4)
    assert limits == CpuLimits(4, frozenset({2, 3}))
    assert limits.describe() == "rigcheck may use 2 of 4 CPUs (2-3, set by affinity)"
    assert CpuLimits(4, frozenset(range(4))).describe() is None


# -- the host reader on a narrowed set --


def test_the_host_reader_measures_the_set_and_the_cgroup(tmp_path: Path) -> None:
    usage = tmp_path / "cpu.stat"
    usage.write_text("usage_usec 0\n")
    limits = CpuLimits(4, frozenset({2, 3}), quota_cpus=1.5, quota_file="cpu.max", usage_file=str(usage))
    FAKE_CLOCK[0] = 1000.0
    host = HostSource(FakePsutil(), root_pid=100, clock=lambda: FAKE_CLOCK[0], cpu_limits=limits, cpu_root=tmp_path)
    host.read()
    FAKE_CLOCK[0] += 1.0
    usage.write_text("usage_usec 1400000\n")  # 1.4 CPU seconds in the cgroup over that second
    sample = host.read()
    assert sample.set_cpus == 2 and sample.set_busy_cpus == pytest.approx(1.0)  # FakePsutil: CPU 2 busy, CPU 3 idle
    assert sample.quota_cpus == 1.5 and sample.group_busy_cpus == pytest.approx(1.4)
    assert sample.group_others_cpus == pytest.approx(0.9)  # rigcheck's own tree used 0.5
    assert sample.cpu_limit == limits.describe()


# -- judging a figure against its set --


def window(
    others: float,
    cpus: int = 2,
    top: tuple[ProcessUse, ...] = (),
    n: int = 6,
    **fields: object,
) -> list[Sample]:
    host = HostSample(cpus, 1.0, busy_cpus=others + 1.0, own_cpus=1.0, own_pids=(10,), top_others=top, **fields)  # type: ignore[arg-type]
    return [Sample(1000.0 + i * 0.1, host) for i in range(n)]


def cpu_figure(threads: int = 2) -> Measurement:
    params = {"bound": "host", "threads": threads, "spread_rel": 0.01}
    return Measurement("matmul", "matmul fp32 512", 150.0, "GFLOP/s", 1.0, 20, "cpu", params)


def test_one_burner_at_half_a_cpu_on_two_cpus_is_suspect_where_the_old_floor_let_it_pass() -> None:
    burner = (ProcessUse(4242, "python3", cpus=0.49),)
    judged = judge(summarise(window(0.49, top=burner), None), cpu_figure())
    assert judged.trust == "SUSPECT"
    assert judged.reasons == [
        "other processes kept 0.5 of 2 CPUs busy while this figure needed 2: python3 (pid 4242, 0.5 CPUs)" + NEXT
    ]
    assert judge(summarise(window(0.04), None), cpu_figure()).trust == "TRUSTED"


def test_a_burner_inside_an_affinity_set_of_two_counts_on_a_host_of_128() -> None:
    burner = (ProcessUse(4242, "python3", cpus=0.49),)
    limited = {
        "set_cpus": 2,
        "set_busy_cpus": 1.49,
        "cpu_limit": "rigcheck may use 2 of 128 CPUs (0-1, set by affinity)",
    }
    conditions = summarise(window(0.49, cpus=128, top=burner, **limited), None)
    assert conditions["cpu_set_size"] == 2 and conditions["cpu_set_others_cpus"] == pytest.approx(0.49)
    judged = judge(conditions, cpu_figure())
    assert judged.trust == "SUSPECT"
    assert judged.reasons == [
        "other processes kept 0.5 of rigcheck's 2 CPUs busy while this figure needed 2: python3 (pid 4242, 0.5 CPUs)"
        + NEXT
    ]
    assert judged.notes == ["rigcheck may use 2 of 128 CPUs (0-1, set by affinity)"]
    # the same burner pinned outside the set leaves the set quiet
    outside = summarise(window(0.49, cpus=128, top=burner, **limited | {"set_busy_cpus": 1.02}), None)
    assert judge(outside, cpu_figure()).trust == "TRUSTED"


def test_a_process_busy_through_the_whole_window_counts_on_128_cpus_as_on_2() -> None:
    burner = (ProcessUse(4242, "burn", cpus=0.9),)
    wide = cpu_figure(threads=128)
    steady = summarise(window(0.9, cpus=128, top=burner), None)
    assert steady["host_steady_others"] == [{"pid": 4242, "name": "burn", "cpus": 0.9}]
    judged = judge(steady, wide)
    assert judged.trust == "SUSPECT" and judged.reasons[0].startswith("other processes kept 0.9 of 128 CPUs busy")
    # the same load in one sample of six is a passing blip, under the floor of 6.4 CPUs for 128 threads
    blip = window(0.9, cpus=128)
    blip[2] = Sample(blip[2].t, HostSample(128, 1.0, busy_cpus=1.9, own_cpus=1.0, own_pids=(10,), top_others=burner))
    assert judge(summarise(blip, None), wide).trust == "TRUSTED"
    # a single-thread GPU figure on 128 CPUs is not slowed by one burner
    assert judge(summarise(window(0.9, cpus=128, top=burner), None), cpu_figure(threads=1)).trust == "TRUSTED"


def test_a_tight_quota_is_named_and_its_other_users_count() -> None:
    quota = {"quota_cpus": 1.5, "group_busy_cpus": 1.1, "cpu_limit": "rigcheck may use a cgroup CPU quota of 1.5 CPUs"}
    quiet = summarise(window(0.1, cpus=64, **quota), None)
    assert quiet["cpu_quota"] == 1.5 and quiet["cpu_quota_others_cpus"] == pytest.approx(0.1)
    one = judge(quiet, cpu_figure(threads=1))
    assert one.trust == "TRUSTED" and one.notes == ["rigcheck may use a cgroup CPU quota of 1.5 CPUs"]
    four = judge(quiet, cpu_figure(threads=4))
    assert four.trust == "SUSPECT"
    assert four.reasons[-1:] == [
        "this figure's 4 threads share a cgroup CPU quota of 1.5 CPUs: the quota, not the CPUs, set its pace; "
        "next: `cat /sys/fs/cgroup/cpu.max` (v1: cpu.cfs_quota_us), raise the quota or run fewer threads"
    ]
    shared = judge(summarise(window(0.1, cpus=64, **quota | {"group_busy_cpus": 1.8}), None), cpu_figure(1))
    assert shared.trust == "SUSPECT"
    assert shared.reasons == [
        "other processes in rigcheck's cgroup used 0.8 of its CPU quota of 1.5 while this figure needed 1" + NEXT
    ]


# -- waiting for a quiet host by the same rule --


class LiveSet(FakeSampler):
    """Samples every 0.1 s up to now: a 2-CPU affinity set on a 16-CPU host with a burner inside it."""

    def __init__(self, set_others: float) -> None:
        super().__init__([])
        self.set_others = set_others

    def window(self, t0: float, t1: float) -> list[Sample]:
        top = (ProcessUse(4242, "burner", cpus=self.set_others),) if self.set_others else ()
        host = HostSample(
            16, 1.0, self.set_others, 0.0, top_others=top, set_cpus=2, set_busy_cpus=self.set_others, cpu_limit="x"
        )
        now = time.time()
        return [Sample(t, host) for t in (now - i * 0.1 for i in range(100)) if t0 <= t <= t1]


def test_wait_quiet_judges_the_set_by_the_figures_rule() -> None:
    busy = others_busy(LiveSet(0.49), 1.0)
    assert busy is not None and busy.cpus == 2 and busy.others == pytest.approx(0.49)
    assert busy.contended() and not DEFAULT_POLICY.contended(0.49, 16)  # the whole host would have looked quiet
    assert busy.describe() == "other processes keep 0.5 of rigcheck's 2 CPUs busy: burner (pid 4242, 0.5 CPUs)"
    waiter = wait_quiet(LiveSet(0.49), max_wait_s=0.6, quiet_for_s=0.3, say_every_s=0.1)
    with pytest.raises(StopIteration) as stop:
        while True:
            next(waiter)
    assert stop.value.value[0] is False
    quiet = others_busy(LiveSet(0.0), 1.0)
    assert quiet is not None and not quiet.contended()


# -- rigcheck's viewers --


@pytest.mark.parametrize(
    "argv",
    [
        ["/venv/bin/python3", "-m", "rigcheck.tui.cli", "follow", "last"],
        ["/venv/bin/python3", "/venv/bin/rigcheck", "follow"],
        ["rigcheck"],
        ["/usr/local/bin/rigcheck", "--store", "/tmp/s.db", "monitor", "--json"],
        ["python3.11", "-u", "-m", "rigcheck.tui.cli", "app", "--profile", "quick"],
        ["/venv/bin/rigcheck", "serve", "--port", "8000"],
        ["/venv/bin/rigcheck", "--device", "cuda:0"],
    ],
)
def test_viewers_are_known_by_their_command_line(argv: list[str]) -> None:
    assert is_viewer_command(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["/venv/bin/python3", "-m", "rigcheck.tui.cli", "run", "matmul"],
        ["/venv/bin/rigcheck", "run", "burn", "--duration", "60"],
        ["python3", "-c", "while True: pass"],
        ["python3", "burn.py", "follow"],
        ["python3", "-m", "rigcheck.engine.run.child"],
        ["vim", "rigcheck"],
        ["/venv/bin/rigcheck", "--version"],
        [],
    ],
)
def test_other_command_lines_are_not_viewers(argv: list[str]) -> None:
    assert not is_viewer_command(argv)


def test_viewers_that_vanish_or_are_zombies_are_skipped_never_raised(tmp_path: Path) -> None:
    proc = proc_tree(tmp_path, {700: ("python3", 10), 701: ("python3", 10), 702: ("python3", 10), 703: ("bash", 1)})
    (proc / "700" / "cmdline").write_bytes(b"/venv/bin/python3\0-m\0rigcheck.tui.cli\0follow\0")
    (proc / "701" / "cmdline").write_bytes(b"")  # a zombie's command line reads empty
    (proc / "703" / "cmdline").write_bytes(b"/venv/bin/rigcheck\0follow\0")  # not an interpreter's name: not read

    def cmdline(pid: int) -> list[str] | None:
        if pid == 702:
            raise ProcessLookupError(pid)  # ended between the scan and the read
        return process_cmdline(pid, proc)

    viewers = Viewers(cmdline)
    assert viewers.find(scan_procfs(proc)) == {700}
    assert process_cmdline(999, proc) is None


class PsutilWithViewer(FakePsutil):
    """FakePsutil with `rigcheck follow` (pid 600) using 1.5 CPUs, a zombie (601) and a process that ends (602)."""

    def __init__(self) -> None:
        super().__init__()
        viewer = SimpleNamespace(
            pid=600,
            name="python3",
            cmdline=lambda: ["/venv/bin/python3", "-m", "rigcheck.tui.cli", "follow"],
            children=lambda recursive=False: [],
            cpu_times=lambda: SimpleNamespace(user=FAKE_CLOCK[0] * 1.5, system=0.0),
        )
        self.viewer = viewer
        self.others = [*self.others, viewer, SimpleNamespace(pid=601, name="python3", cpu_times=lambda: None)]

    def process_iter(self, attrs: list[str]) -> list[SimpleNamespace]:
        listed = super().process_iter(attrs)
        for entry in listed:
            if entry.pid == 601:
                entry.info["cpu_times"] = SimpleNamespace(user=0.0, system=0.0)
        return [*listed, SimpleNamespace(pid=602, info={"name": "python3", "cpu_times": None, "ppid": 1})]

    def cpu_percent(self, percpu: bool = False) -> list[float]:
        return [100.0, 100.0, 100.0, 100.0]

    def Process(self, pid: int):  # type: ignore[no-untyped-def]
        if pid == 600:
            return self.viewer
        if pid == 601:
            raise RuntimeError("zombie process")  # psutil.ZombieProcess
        return super().Process(pid)


def test_a_viewer_is_rigcheck_s_own_not_another_process() -> None:
    FAKE_CLOCK[0] = 1000.0
    host = HostSource(PsutilWithViewer(), root_pid=100, clock=lambda: FAKE_CLOCK[0], cpu_limits=CpuLimits(4))
    host.read()
    FAKE_CLOCK[0] += 2.0
    host.read()  # the second scan ranks, and primes the viewer's own reading
    FAKE_CLOCK[0] += 0.1
    sample = host.read()
    assert 600 in sample.own_pids
    assert [p.pid for p in sample.top_others] == [500, 501]  # burn and editor; the viewer is not listed
    assert sample.own_cpus == pytest.approx(2.0)  # the tree's 0.5 and the viewer's 1.5
    assert sample.others_cpus == pytest.approx(2.0)


def test_the_contention_report_bands_by_the_load_on_rigcheck_s_set() -> None:
    narrowed = HostSample(128, 1.0, busy_cpus=60.0, own_cpus=1.0, set_cpus=2, set_busy_cpus=1.2)
    assert others_share(Sample(1.0, narrowed).to_dict()["host"]) == pytest.approx(0.1)
    whole = HostSample(16, 1.0, busy_cpus=9.0, own_cpus=1.0)
    assert others_share(Sample(1.0, whole).to_dict()["host"]) == pytest.approx(0.5)
