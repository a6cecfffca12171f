"""hw/ is the one door to the hardware: every reader against the compiled stand-in NVML, and a grep of the
engine proving that nothing else loads NVML or reads amdgpu's or PCI's sysfs."""

from __future__ import annotations

import ast
import ctypes
import re
import sys
from pathlib import Path

import pytest
from fakes import build_fake_nvml
from rigcheck.engine.facts.nvidia_driver import nvidia_driver
from rigcheck.engine.hw import nvml as hw_nvml
from rigcheck.engine.hw.amdgpu import amdgpu_cards, kfd_topology
from rigcheck.engine.hw.nvml import Nvml, NvmlFailure, NvmlUnavailable, open_nvml
from rigcheck.engine.hw.pci import sysfs_max_link, torch_bus_id
from rigcheck.engine.hw.sysfs import read_float, read_int, read_text
from rigcheck.engine.stages.links.topology import NvmlLinks, read_topology
from rigcheck.engine.telemetry.nvml import NvmlSource

ENGINE = Path(__file__).resolve().parents[2] / "engine"
TUI = ENGINE.parent / "tui"
LACKED_ON_PURPOSE = {"nvmlDeviceGetCurrentClocksEventReasons"}  # the fake is a driver before 535


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_fake_nvml(tmp_path_factory.mktemp("nvml"))


@pytest.fixture
def fake_library(library: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every reader that opens NVML itself opens the stand-in."""
    monkeypatch.setattr(hw_nvml, "LIBRARY", str(library))
    return library


def _sources(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root.parent)): p.read_text() for p in sorted(root.rglob("*.py"))}


def test_the_fake_library_answers_every_call_the_binding_makes(library: Path) -> None:
    binding = [ENGINE / "hw" / name for name in ("nvml.py", "nvml_health.py")]
    named = {call for path in binding for call in re.findall(r'"(nvml[A-Z]\w+)"', path.read_text())}
    assert len(named) > 40
    lib = ctypes.CDLL(str(library))
    absent = {name for name in named if not hasattr(lib, name)}
    assert absent == LACKED_ON_PURPOSE


def test_the_telemetry_reader_reads_the_fake_library(fake_library: Path) -> None:
    source = NvmlSource(name_of=lambda pid: f"p{pid}", clock=lambda: 1000.0)
    first, second = source.read()
    source.close()
    assert (first.pci_bus_id, second.pci_bus_id) == ("0000:18:00.0", "0000:3b:00.0")
    assert (first.uuid, first.name, first.source) == ("GPU-fake-0", "NVIDIA H200", "nvml")
    assert (first.sm_clock_mhz, first.mem_clock_mhz, first.max_sm_clock_mhz, first.max_mem_clock_mhz) == (
        1980,
        3201,
        1980,
        3201,
    )
    assert (first.temperature_c, first.power_w, first.power_limit_w) == (40, 126.0, 700.0)  # mW to W
    assert (first.utilization_pct, second.utilization_pct) == (97, 0)
    assert (first.memory_used, second.memory_used) == (5, 2)  # v2 where the driver has it, else v1
    assert first.memory_total == 150_000_000_000
    assert first.throttle == ("idle",)
    assert second.throttle == ("idle", "software thermal slowdown")  # through the older call's name
    assert [(p.pid, p.name, p.gpu_memory, p.sm_pct) for p in first.processes] == [
        (4242, "p4242", 2**30, 55.0),  # the newest of its two samples
        (4343, "p4343", None, None),  # memory the driver cannot say; no SM sample
    ]
    assert second.processes == () and second.process_pids == ()


def test_a_stage_child_reads_the_sensors_without_the_process_lists(fake_library: Path) -> None:
    source = NvmlSource(processes=False)
    first, _ = source.read()
    source.close()
    assert first.processes == () and first.sm_clock_mhz == 1980


def test_the_links_topology_reads_the_fake_library(fake_library: Path) -> None:
    found = read_topology(["0000:3b:00.0", "0000:18:00.0"], hip=False)
    assert found["source"] == "NVML"
    assert found["cells"] == [["X", "NV6"], ["NV6", "X"]]
    assert [g["nvml_index"] for g in found["gpus"]] == [1, 0]  # torch's order, matched by bus id
    assert [g["nvlinks_active"] for g in found["gpus"]] == [6, 6]
    assert found["gpus"][0]["pcie"] == {"gen": 4, "width": 8, "max_gen": 5, "max_width": 16}
    nvml = open_nvml()
    assert isinstance(nvml, Nvml)
    links = NvmlLinks(nvml)
    assert links.common_ancestor(0, 1) == 40  # NODE, drawn where no NVLink joins the pair
    assert links.bus_id(1) == "0000:3b:00.0"
    assert links.nvlinks(0) == [("0000:3b:00.0", 0)] * 6
    links.close()


def test_the_driver_facts_read_the_fake_library(fake_library: Path) -> None:
    facts = nvidia_driver()
    assert (facts["available"], facts["driver_version"], facts["cuda_driver_api"]) == (True, "580.95.05", "13.0")
    assert [(d["uuid"], d["memory_used"]) for d in facts["devices"]] == [("GPU-fake-0", 2), ("GPU-fake-1", 2)]  # v1


def test_without_the_library_every_reader_says_why_and_nothing_raises(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(hw_nvml, "LIBRARY", str(tmp_path / "libnvidia-ml-absent.so"))
    absent = open_nvml()
    assert isinstance(absent, NvmlUnavailable) and not absent.loaded
    assert read_topology(["0000:18:00.0"], hip=False)["reason"].startswith("NVML not usable: ")
    assert "not loadable" in nvidia_driver()["reason"]
    with pytest.raises(RuntimeError, match="NVML not usable"):
        NvmlSource()


def test_a_call_the_driver_lacks_is_a_failure_not_an_exception(library: Path) -> None:
    nvml = open_nvml(str(library))
    assert isinstance(nvml, Nvml)
    handle = nvml.handle(0)
    assert nvml.clock_event_reasons(handle) == 1  # the newer call is absent: the older one answers
    assert nvml.mig_mode(handle) == NvmlFailure(3, "Not Supported")
    assert isinstance(nvml.handle(7), NvmlFailure)
    nvml.close()
    no_nvml = Nvml(ctypes.CDLL(None))  # a library with none of NVML's calls
    lacking = no_nvml.power_usage(handle)
    assert isinstance(lacking, NvmlFailure) and lacking.code == hw_nvml.FUNCTION_NOT_FOUND
    assert "nvmlDeviceGetPowerUsage" in lacking.text


def test_sysfs_reads_and_amdgpu_cards(tmp_path: Path) -> None:
    (tmp_path / "n").write_text(" 42\n")
    (tmp_path / "t").write_text("x\n")
    assert (read_int(tmp_path / "n"), read_float(tmp_path / "n"), read_text(tmp_path / "t")) == (42, 42.0, "x")
    assert read_int(tmp_path / "t") is None and read_text(tmp_path / "absent") is None
    device = tmp_path / "devices" / "0000:c1:00.0"
    device.mkdir(parents=True)
    (device / "vendor").write_text("0x1002\n")
    (device / "max_link_speed").write_text("32.0 GT/s PCIe\n")
    (device / "max_link_width").write_text("16\n")
    for name in ("card0", "card0-DP-1"):
        (tmp_path / "drm" / name).mkdir(parents=True)
    (tmp_path / "drm" / "card0" / "device").symlink_to(device)
    [card] = amdgpu_cards(tmp_path / "drm")
    assert (card.card, card.pci) == ("card0", "0000:c1:00.0")
    assert sysfs_max_link("0000:c1:00.0", tmp_path / "devices") == (32.0, 16)
    assert sysfs_max_link("0000:c2:00.0", tmp_path / "devices") is None
    assert kfd_topology(tmp_path / "absent") is None


def test_torch_properties_give_an_address() -> None:
    class Props:
        pci_domain_id, pci_bus_id, pci_device_id = 1, 0xC5, 3

    assert torch_bus_id(Props()) == "0001:c5:03.0" and torch_bus_id(object()) is None


def test_only_hw_nvml_loads_nvml() -> None:
    everything = _sources(ENGINE) | _sources(TUI)
    naming = {path for path, text in everything.items() if re.search(r"libnvidia-ml|pynvml|nvidia-ml-py", text)}
    assert naming == {"engine/hw/nvml.py"}
    calling = {path for path, text in everything.items() if re.search(r"[\"']nvml[A-Z]\w+[\"']", text)}
    assert calling == {"engine/hw/nvml.py", "engine/hw/nvml_health.py"}  # the binding and its health calls
    loading = {
        path
        for path, text in everything.items()
        if any(not call.startswith("CDLL(None") for call in re.findall(r"CDLL\([^)]*", text))
    }
    assert loading == {"engine/hw/nvml.py"}


def test_only_hw_reads_amdgpu_and_pci_sysfs() -> None:
    paths = re.compile(r"/sys/(class/drm|bus/pci|class/kfd|module/amdgpu)")
    readers = {path for path, text in _sources(ENGINE).items() if paths.search(text)}
    assert readers and all(path.startswith("engine/hw/") for path in readers), readers


def test_hw_imports_only_the_standard_library_and_itself() -> None:
    for path in sorted((ENGINE / "hw").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                assert top in sys.stdlib_module_names or name.startswith("rigcheck.engine.hw"), (path.name, name)


def test_facts_and_telemetry_do_not_import_each_other() -> None:
    for package, other in (("facts", "telemetry"), ("telemetry", "facts")):
        for path, text in _sources(ENGINE / package).items():
            assert f"rigcheck.engine.{other}" not in text, path
