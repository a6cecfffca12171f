"""Who else is on each GPU and the host: bus ids matched across reorderings, process names, the busiest others."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FAKE_CLOCK, FakeGpuProcess, FakeNvml, FakePsutil, amd_sysfs_tree, proc_tree
from rigcheck.engine.hw.pci import bus_id_from_parts, normalise_bus_id
from rigcheck.engine.telemetry.host import HostSource
from rigcheck.engine.telemetry.nvml import NvmlSource
from rigcheck.engine.telemetry.others import CLOCK_TICKS, BusiestOthers, descendants, scan_procfs
from rigcheck.engine.telemetry.sample import HostSample, ProcessUse, Sample, find_gpu
from rigcheck.engine.telemetry.sysfs import AmdSysfsSource


@pytest.mark.parametrize(
    "text",
    ["00000000:1B:00.0", "0000:1b:00.0", "1B:00.0", "1b:0.0", b"00000000:1B:00.0\x00", " 0000:1B:00.0\n"],
)
def test_every_spelling_of_a_bus_id_is_one(text: str) -> None:
    assert normalise_bus_id(text) == "0000:1b:00.0"


@pytest.mark.parametrize("text", [None, "", "GPU-1234", "1b:00", "0000:1g:00.0", "1b:00.9"])
def test_what_is_not_a_bus_id_is_none(text: str | None) -> None:
    assert normalise_bus_id(text) is None


def test_domains_are_kept() -> None:
    assert normalise_bus_id("00000001:C5:00.0") == "0001:c5:00.0"


def test_torch_numbers_give_the_same_address() -> None:
    assert bus_id_from_parts(0, 0x1B, 0) == normalise_bus_id("00000000:1B:00.0")
    assert bus_id_from_parts(1, 0xC5, 3) == "0001:c5:03.0"


def test_reordered_devices_keep_their_own_bus_ids_and_readings() -> None:
    """NVML counts GPUs in its own order; a torch device that names bus 0x1b gets that GPU, wherever
    it is listed, with that GPU's processes."""
    fake = FakeNvml(
        bus_ids=(b"00000000:DB:00.0", "00000000:1B:00.0"),
        processes={0: [FakeGpuProcess(900, "rival", 3 * 2**30, sm=55.0)]},
    )
    gpus = tuple(NvmlSource(fake, name_of=fake.process_name).read())
    assert [g.pci_bus_id for g in gpus] == ["0000:db:00.0", "0000:1b:00.0"]
    assert gpus[0].uuid.startswith("GPU-") and gpus[0].uuid != gpus[1].uuid
    torch_first = find_gpu(gpus, bus_id="0000:1b:00.0")  # what torch calls cuda:0 under CUDA_VISIBLE_DEVICES=1,0
    assert torch_first is gpus[1] and torch_first.processes == ()
    assert find_gpu(gpus, bus_id="DB:00.0").processes[0].name == "rival"
    assert find_gpu(gpus, uuid=gpus[1].uuid.removeprefix("GPU-")) is gpus[1]  # torch prints it bare
    assert find_gpu(gpus, bus_id="0000:3b:00.0") is None and find_gpu(gpus) is None


def test_gpu_processes_carry_name_memory_and_sm_use() -> None:
    fake = FakeNvml(
        processes={0: [FakeGpuProcess(900, "rival", 3 * 2**30, sm=55.0), FakeGpuProcess(901, "notebook", None)]}
    )
    (gpu,) = NvmlSource(fake, name_of=fake.process_name).read()
    assert gpu.processes == (
        ProcessUse(900, "rival", gpu_memory=3 * 2**30, sm_pct=55.0),
        ProcessUse(901, "notebook", gpu_memory=None, sm_pct=None),
    )
    assert gpu.process_pids == (900, 901)


def test_gpu_process_names_are_read_once_and_unknown_ones_are_a_question_mark() -> None:
    asked: list[int] = []

    def name_of(pid: int) -> str:
        asked.append(pid)
        return "?"

    source = NvmlSource(FakeNvml(processes={0: [FakeGpuProcess(77, "")]}), name_of=name_of)
    for _ in range(3):
        (gpu,) = source.read()
    assert asked == [77] and gpu.processes[0].name == "?"


def test_no_per_process_samples_and_missing_calls_read_as_unknown() -> None:
    """The driver raises NotFound when it has no sample, older ones lack the calls: never an error."""
    fake = FakeNvml(processes={0: [FakeGpuProcess(900, "rival")]}, broken={"pci", "uuid"})
    (gpu,) = NvmlSource(fake, name_of=fake.process_name).read()
    assert gpu.processes[0].sm_pct is None and gpu.pci_bus_id is None and gpu.uuid is None


def test_per_process_sm_use_is_read_once_a_second() -> None:
    now = [1000.0]
    fake = FakeNvml(processes={0: [FakeGpuProcess(900, "rival", sm=40.0)]})
    source = NvmlSource(fake, name_of=fake.process_name, clock=lambda: now[0])
    for _ in range(10):
        source.read()
        now[0] += 0.1
    assert len(fake.util_calls) == 1 and fake.util_calls[0] == int(999.0 * 1e6)  # the second before
    now[0] += 0.1
    source.read()
    assert len(fake.util_calls) == 2


def test_sysfs_bus_id_comes_from_the_device_link(tmp_path: Path) -> None:
    (gpu,) = AmdSysfsSource(amd_sysfs_tree(tmp_path)).read()
    assert gpu.pci_bus_id == "0000:c5:00.0"


def test_busiest_others_exclude_own_pids_and_come_busiest_first(tmp_path: Path) -> None:
    ticks = {1: ("init", 100), 100: ("rigcheck", 0), 101: ("stage child", 0), 500: ("burn", 0), 501: ("my editor", 0)}
    proc = proc_tree(tmp_path, ticks)
    now = [0.0]
    others = BusiestOthers(lambda: scan_procfs(proc), clock=lambda: now[0])
    assert others.read({100, 101}) == ()  # the first scan only primes
    # Two seconds later: the stage child used 2 CPUs, burn 1.5, the editor 0.2, init nothing.
    grown = {100: ("rigcheck", 40), 101: ("stage child", 400), 500: ("burn", 300), 501: ("my editor", 40)}
    grown = {pid: (name, t * CLOCK_TICKS // 100) for pid, (name, t) in grown.items()}
    grown |= {7: ("new", CLOCK_TICKS // 50), 8: ("tiny", 0)}  # new since the last scan: 0.02 CPU seconds, too little
    proc_tree(tmp_path, grown)
    now[0] = 2.0
    top = others.read({100, 101})
    assert [(p.pid, p.name) for p in top] == [(500, "burn"), (501, "my editor")]
    assert top[0].cpus == pytest.approx(1.5) and top[1].cpus == pytest.approx(0.2)


def test_busiest_others_keep_five_and_count_new_processes(tmp_path: Path) -> None:
    now = [0.0]
    names = {pid: f"p{pid}" for pid in range(10, 20)}
    proc = proc_tree(tmp_path, {pid: (name, 0) for pid, name in names.items()})
    others = BusiestOthers(lambda: scan_procfs(proc), clock=lambda: now[0])
    others.read(())
    proc_tree(tmp_path, {pid: (name, (pid - 9) * CLOCK_TICKS // 10) for pid, name in names.items()})
    proc_tree(tmp_path, {42: ("born", 4 * CLOCK_TICKS)})  # started after the first scan, 4 CPU seconds
    now[0] = 1.0
    top = others.read(())
    assert [p.pid for p in top] == [42, 19, 18, 17, 16]


def test_host_reader_lists_others_in_its_slow_path() -> None:
    FAKE_CLOCK[0] = 1000.0
    host = HostSource(FakePsutil(), root_pid=100, clock=lambda: FAKE_CLOCK[0])
    assert host.read().top_others == ()
    FAKE_CLOCK[0] += 2.0
    sample = host.read()
    assert [(p.pid, p.name) for p in sample.top_others] == [(500, "burn"), (501, "editor")]  # idle's 0.01 left out
    assert sample.top_others[0].cpus == pytest.approx(2.0)
    assert 100 not in {p.pid for p in sample.top_others} and 101 not in {p.pid for p in sample.top_others}
    assert sample.cpu_max_mhz == 5100.0


def test_samples_with_processes_still_store_as_json() -> None:
    import json

    host = HostSample(2, 1.0, 1.0, 0.0, top_others=(ProcessUse(5, "burn", cpus=1.0),), package_power_w=12.5)
    data = json.loads(json.dumps(Sample(1.0, host).to_dict()))
    assert data["host"]["top_others"][0] == {"pid": 5, "name": "burn", "cpus": 1.0, "gpu_memory": None, "sm_pct": None}


def test_own_tree_comes_from_the_same_scan_grandchildren_included(tmp_path: Path) -> None:
    """A stage child's own workers (torch.compile starts some) are rigcheck's too, not contention."""
    processes = {1: ("init", 0), 100: ("rigcheck", 0), 101: ("stage", 0), 102: ("compile worker", 0), 500: ("burn", 0)}
    scan = scan_procfs(proc_tree(tmp_path, processes, parents={101: 100, 102: 101, 100: 1, 500: 1}))
    assert descendants(100, scan) == {100, 101, 102}
    assert scan[102].name == "compile worker" and scan[102].ppid == 101
    assert descendants(999, scan) == {999}
