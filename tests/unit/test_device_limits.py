"""engine/stages/common/limits.py: each figure's physical limit on the device it was measured on, read through
fake device properties, a fake NVML and a fake sysfs tree: the datasheet, the units-and-clock bound (NVIDIA
and ROCm, whose arch names carry feature suffixes), emulated dtypes, the host link (NVML, else sysfs; none on an
APU or Grace) and the CPU (cpufreq, else 1.5x the top MHz /proc/cpuinfo shows)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
from rigcheck.engine.hw.nvml import NvmlFailure, NvmlUnavailable
from rigcheck.engine.measure.plausibility import LIMIT_MARGIN, over_limit
from rigcheck.engine.stages.common import limits

DEVICE = torch.device("cuda", 0)


def props(major: int = 9, minor: int = 0, units: int = 132, arch: str = "", **more: Any) -> SimpleNamespace:
    return SimpleNamespace(major=major, minor=minor, multi_processor_count=units, gcnArchName=arch, **more)


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """A GPU the test describes: its name, its properties and whether torch is a ROCm build."""
    state: dict[str, Any] = {"name": "Some GPU", "props": props(), "hip": None}
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: state["name"])
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: state["props"])
    monkeypatch.setattr(torch.version, "hip", None)

    def rocm(arch: str, units: int) -> None:
        monkeypatch.setattr(torch.version, "hip", "6.2.41133")
        state["props"] = props(units=units, arch=arch)

    state["rocm"] = rocm
    limits._nvml_link.cache_clear()
    yield state
    limits._nvml_link.cache_clear()


# -- matrix multiply limits --


def test_the_datasheet_peak_comes_first_and_names_its_source(gpu: dict[str, Any]) -> None:
    gpu["name"] = "NVIDIA H200"
    found = limits.gpu_matmul_limit(DEVICE, "bf16")
    assert found is not None and found.value == 989.4
    assert found.basis == "datasheet dense bf16 peak: NVIDIA H200 Tensor Core GPU datasheet (SXM)"
    # a dtype the datasheet row lacks falls to the units-and-clock bound: fp8 on sm_90
    gpu["name"] = "Tesla P40"
    gpu["props"] = props(6, 1, units=30)
    assert limits.gpu_matmul_limit(DEVICE, "fp32").value == 12.0  # type: ignore[union-attr]


def test_without_a_datasheet_the_bound_is_units_times_a_generous_clock(gpu: dict[str, Any]) -> None:
    gpu["props"] = props(8, 9, units=128)  # an unlisted Ada card: sm_89
    found = limits.gpu_matmul_limit(DEVICE, "fp8")
    assert found is not None and found.value == pytest.approx(128 * 2.6 * 2048 / 1e3)
    assert found.basis == "128 units x 2.6 GHz x 2048 fp8 FLOP/clock (sm_89)"
    assert limits.gpu_matmul_limit(DEVICE, "fp4") is None  # no rate known for the dtype: no bound
    gpu["props"] = props(3, 7)  # an architecture the table lacks
    assert limits.gpu_matmul_limit(DEVICE, "fp32") is None


def test_the_bound_is_above_every_real_chip_and_within_three_times_its_peak(gpu: dict[str, Any]) -> None:
    """The generous clock must put the bound above what the chip can do (never call a real figure impossible),
    yet near enough that a figure twice the real peak is still caught."""
    assert limits.GENEROUS_CLOCK_GHZ == 2.6
    # (name the datasheet table lacks, arch, units, dtype, published dense peak TFLOP/s)
    chips = [
        ("RTX 4090", (8, 9), 128, "bf16", 165.2),
        ("RTX 3090", (8, 6), 82, "fp16", 142.0),
        ("V100 SXM2", (7, 0), 80, "fp16", 125.0),
        ("H100 PCIe", (9, 0), 114, "bf16", 756.0),
        ("B200", (10, 0), 148, "bf16", 2250.0),
    ]
    for name, (major, minor), units, dtype, peak in chips:
        gpu["name"], gpu["props"] = name, props(major, minor, units=units)
        found = limits.gpu_matmul_limit(DEVICE, dtype)
        assert found is not None and peak < found.value < 3 * peak, (name, found)
        assert over_limit(peak, "TFLOP/s", found.value, found.basis) is None
        assert over_limit(3 * peak * (1 + LIMIT_MARGIN), "TFLOP/s", found.value, found.basis) is not None


def test_a_dtype_the_gpu_emulates_is_bounded_by_its_fp32_rate(gpu: dict[str, Any]) -> None:
    gpu["props"] = props(6, 1, units=30)  # sm_61: fp16 at 1/64 of fp32
    found = limits.gpu_matmul_limit(DEVICE, "fp16")
    fp32 = 30 * 2.6 * 256 / 1e3
    assert found is not None and found.value == pytest.approx(fp32)
    assert found.basis == (
        "fp16 runs at 1/64 of fp32 on sm_61, so at most the fp32 rate: 30 units x 2.6 GHz x 256 fp32 FLOP/clock (sm_61)"
    )
    gpu["props"] = props(7, 5, units=40)  # Turing: bf16 emulated, bounded by fp32 (not its fp16 rate)
    bf16 = limits.gpu_matmul_limit(DEVICE, "bf16")
    assert bf16 is not None and bf16.value == pytest.approx(40 * 2.6 * 128 / 1e3)
    assert bf16.basis.startswith("bf16 emulated: sm_75 has no native bf16 (it came with sm_80), so at most")
    gpu["props"] = props(3, 0)  # emulated, and no fp32 rate known either: no bound at all
    assert limits.gpu_matmul_limit(DEVICE, "bf16") is None


def test_rocm_arch_names_lose_their_feature_suffix_and_rdna_goes_by_family(gpu: dict[str, Any]) -> None:
    gpu["rocm"]("gfx942:sramecc+:xnack-", 304)
    assert limits.arch_of(DEVICE) == "gfx942"
    found = limits.gpu_matmul_limit(DEVICE, "bf16")
    assert found is not None and found.value == pytest.approx(304 * 2.6 * 2048 / 1e3)
    assert found.basis.endswith("(gfx942)")
    gpu["rocm"]("gfx1151", 40)  # Strix Halo's 8060S: the gfx11 family's rates
    assert limits.arch_of(DEVICE) == "gfx1151"
    rdna = limits.gpu_matmul_limit(DEVICE, "fp16")
    assert rdna is not None and rdna.value == pytest.approx(40 * 2.6 * 1024 / 1e3)
    gpu["rocm"]("gfx1201", 64)
    assert limits.gpu_matmul_limit(DEVICE, "fp8").value == pytest.approx(64 * 2.6 * 4096 / 1e3)  # type: ignore[union-attr]
    gpu["rocm"]("gfx1030", 80)  # RDNA 2: no family row, and bf16 emulated
    assert limits.gpu_matmul_limit(DEVICE, "fp32") is None
    gpu["rocm"]("", 80)  # a ROCm build that names no arch
    assert limits.arch_of(DEVICE) == ""
    gpu["props"] = props(arch=None)
    assert limits.arch_of(DEVICE) == ""


def test_an_nvidia_arch_is_its_compute_capability(gpu: dict[str, Any]) -> None:
    gpu["props"] = props(12, 0, arch="gfx942")  # a CUDA build ignores any gcnArchName
    assert limits.arch_of(DEVICE) == "sm_120"


def test_the_units_table_as_reviewed(gpu: dict[str, Any]) -> None:
    """Every rate in the table, so a changed one is a reviewed diff (the vendors' whitepapers, rounded up)."""
    assert limits.UNIT_FLOP_PER_CLOCK == {
        "sm_50": {"fp32": 256},
        "sm_52": {"fp32": 256},
        "sm_60": {"fp32": 128, "fp16": 256},
        "sm_61": {"fp32": 256},
        "sm_70": {"fp32": 128, "fp16": 1024},
        "sm_75": {"fp32": 128, "fp16": 1024},
        "sm_80": {"fp32": 128, "tf32": 1024, "fp16": 2048, "bf16": 2048},
        "sm_86": {"fp32": 256, "tf32": 512, "fp16": 1024, "bf16": 1024},
        "sm_89": {"fp32": 256, "tf32": 512, "fp16": 1024, "bf16": 1024, "fp8": 2048},
        "sm_90": {"fp32": 256, "tf32": 2048, "fp16": 4096, "bf16": 4096, "fp8": 8192},
        "sm_100": {"fp32": 256, "tf32": 4096, "fp16": 8192, "bf16": 8192, "fp8": 16384},
        "sm_120": {"fp32": 256, "tf32": 2048, "fp16": 4096, "bf16": 4096, "fp8": 8192},
        "gfx90a": {"fp32": 256, "fp16": 1024, "bf16": 1024},
        "gfx942": {"fp32": 512, "tf32": 1024, "fp16": 2048, "bf16": 2048, "fp8": 4096},
        "gfx11": {"fp32": 256, "fp16": 1024, "bf16": 1024},
        "gfx12": {"fp32": 256, "fp16": 2048, "bf16": 2048, "fp8": 4096},
    }
    # and each is the rate the bound uses: one unit at 1 GHz would give per_clock GFLOP/s
    for arch, rates in limits.UNIT_FLOP_PER_CLOCK.items():
        assert limits._unit_rates(arch) == rates
    assert limits._unit_rates("gfx1100") == limits.UNIT_FLOP_PER_CLOCK["gfx11"]
    assert limits._unit_rates("gfx1200") == limits.UNIT_FLOP_PER_CLOCK["gfx12"]
    assert limits._unit_rates("gfx1010") is None and limits._unit_rates("gfx906") is None


# -- the CPU --


def test_the_cpu_limit_reads_cpufreq_and_else_half_again_the_top_cpuinfo_mhz(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    facts = {"logical_cpus": 4, "max_mhz": 3000.0, "flags": ["avx2", "fma"], "machine": "x86_64"}
    monkeypatch.setattr(limits, "cpu_facts", lambda: facts)
    found = limits.cpu_limit("fp32")
    assert found is not None and found.value == pytest.approx(4 * 3.0 * 32)
    assert found.basis == "4 CPUs x 3,000 MHz x 32 fp32 FLOP/cycle"
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\ncpu MHz\t\t: 2100.000\n\nprocessor\t: 1\ncpu MHz\t\t: 2400.500\n")
    monkeypatch.setattr(limits, "Path", lambda _: cpuinfo)
    facts["max_mhz"] = None  # a VM without cpufreq: turbo may run above what cpuinfo shows
    assert limits._cpuinfo_top_mhz() == pytest.approx(2400.5 * 1.5)
    assert limits.cpu_limit("fp32").value == pytest.approx(4 * 2.40050 * 1.5 * 32)  # type: ignore[union-attr]
    facts["flags"], facts["machine"] = [], "aarch64"  # no x86 flags on Arm: its own FMA pipes
    assert limits.cpu_limit("fp32").value == pytest.approx(4 * 2.40050 * 1.5 * 32)  # type: ignore[union-attr]
    facts["machine"] = ""  # a missing machine is not Arm: SSE's 16
    assert limits.cpu_limit("fp32").value == pytest.approx(4 * 2.40050 * 1.5 * 16)  # type: ignore[union-attr]
    del facts["machine"]
    assert limits.cpu_limit("fp32").value == pytest.approx(4 * 2.40050 * 1.5 * 16)  # type: ignore[union-attr]
    cpuinfo.write_text("processor\t: 0\n")  # no MHz shown: no bound
    assert limits._cpuinfo_top_mhz() is None and limits.cpu_limit("fp32") is None
    cpuinfo.unlink()  # unreadable
    assert limits._cpuinfo_top_mhz() is None
    facts["max_mhz"], facts["flags"] = 3000.0, None  # flags not read: SSE's rate
    assert limits.cpu_limit("bf16").value == pytest.approx(4 * 3.0 * 32)  # type: ignore[union-attr]


# -- device memory --


def test_the_device_copy_limit_is_the_datasheet_bandwidth(gpu: dict[str, Any]) -> None:
    gpu["name"] = "NVIDIA H200"
    found = limits.device_copy_limit(DEVICE)
    assert found is not None and found.value == 4800.0
    assert found.basis == "datasheet memory bandwidth: NVIDIA H200 datasheet: 4.8 TB/s HBM3e"
    gpu["name"] = "NVIDIA GeForce RTX 4090"
    assert limits.device_copy_limit(DEVICE) is None


# -- the host link --


class FakeNvml:
    """The NVML calls _nvml_link makes, answering for GPUs given as {bus id: (max gen, GPU max gen, width)}."""

    def __init__(self, gpus: dict[str, tuple[Any, Any, Any]], pci_fails: bool = False) -> None:
        self.gpus = list(gpus.items())
        self.pci_fails = pci_fails
        self.closed = 0

    def count(self) -> int:
        return len(self.gpus)

    def handle_by_bus_id(self, address: str) -> Any:
        return NvmlFailure(13, "a driver without the by-address call: each GPU's PCI info is read")

    def handle(self, index: int) -> int:
        return index

    def pci_info(self, handle: int) -> Any:
        if self.pci_fails:
            return NvmlFailure(999, "Unknown Error")
        return SimpleNamespace(bus_id=self.gpus[handle][0])

    def _answer(self, handle: int, position: int) -> Any:
        value = self.gpus[handle][1][position]
        return NvmlFailure(13, "Not Supported") if value is None else value

    def pcie_max_generation(self, handle: int) -> Any:
        return self._answer(handle, 0)

    def pcie_gpu_max_generation(self, handle: int) -> Any:
        return self._answer(handle, 1)

    def pcie_max_width(self, handle: int) -> Any:
        return self._answer(handle, 2)

    def close(self) -> None:
        self.closed += 1


def with_nvml(monkeypatch: pytest.MonkeyPatch, nvml: Any) -> Any:
    monkeypatch.setattr(limits, "open_nvml", lambda: nvml)
    limits._nvml_link.cache_clear()
    return nvml


def test_nvml_gives_the_links_top_generation_and_width(monkeypatch: pytest.MonkeyPatch, gpu: dict[str, Any]) -> None:
    gpus = {
        "00000000:18:00.0": (4, 4, 16),
        "00000000:3B:00.0": (4, 5, 16),  # the GPU's own top generation is the higher: it is the bound
        "00000000:5c:00.0": (None, 3, 8),  # the link's own generation not reported: the GPU's
        "00000000:86:00.0": (5, None, 16),  # the GPU's own not reported: the link's (a mutant dropping it left none)
        "00000000:af:00.0": (5, 4, 16),  # the link's generation the higher: it is the bound
    }
    nvml = with_nvml(monkeypatch, FakeNvml(gpus))
    found = limits._nvml_link("0000:3b:00.0")
    assert found is not None and found.value == pytest.approx(3.938 * 16)
    assert found.basis == "PCIe Gen5 x16, one direction (NVML's maximum link)"
    assert nvml.closed == 1
    limits._nvml_link.cache_clear()
    assert limits._nvml_link("0000:5c:00.0").value == pytest.approx(0.985 * 8)  # type: ignore[union-attr]
    limits._nvml_link.cache_clear()
    assert limits._nvml_link("0000:18:00.0").value == pytest.approx(1.969 * 16)  # type: ignore[union-attr]
    limits._nvml_link.cache_clear()
    for address in ("0000:86:00.0", "0000:af:00.0"):
        assert limits._nvml_link(address).value == pytest.approx(3.938 * 16), address  # type: ignore[union-attr]
        limits._nvml_link.cache_clear()
    assert limits._nvml_link("0000:99:00.0") is None  # a GPU NVML does not list
    assert nvml.closed == 6  # closed on every path


def test_nvml_without_a_generation_or_width_or_its_pci_info_gives_no_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    for answers in ((None, None, 16), (0, 0, 16), (4, 4, None), (4, 4, 0)):
        nvml = with_nvml(monkeypatch, FakeNvml({"00000000:18:00.0": answers}))
        assert limits._nvml_link("0000:18:00.0") is None, answers
        assert nvml.closed == 1
    nvml = with_nvml(monkeypatch, FakeNvml({"00000000:18:00.0": (4, 4, 16)}, pci_fails=True))
    assert limits._nvml_link("0000:18:00.0") is None  # a GPU NVML cannot place: no bound, not another's
    assert nvml.closed == 1
    with_nvml(monkeypatch, NvmlUnavailable("libnvidia-ml.so.1 not found", loaded=False))
    assert limits._nvml_link("0000:18:00.0") is None


def test_nvml_places_a_gpu_after_others_it_cannot_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first GPU's failed handle does not stop the search for the second, found by its exact address (hw.gpu_at:
    the one answer for a GPU NVML cannot place is None, and a GPU it places by address is never a guess)."""

    class OneBadHandle(FakeNvml):
        def handle(self, index: int) -> Any:
            return NvmlFailure(15, "GPU is lost") if index == 0 else index

    nvml = with_nvml(monkeypatch, OneBadHandle({"00000000:18:00.0": (4, 4, 16), "00000000:3b:00.0": (5, 5, 16)}))
    found = limits._nvml_link("0000:3b:00.0")
    assert found is not None and found.value == pytest.approx(3.938 * 16)
    limits._nvml_link.cache_clear()
    assert limits._nvml_link("0000:18:00.0") is None  # the lost GPU itself: not placed, no bound
    assert nvml.closed == 2


def test_nvml_that_cannot_count_its_gpus_places_none(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoCount(FakeNvml):
        def count(self) -> Any:
            return NvmlFailure(999, "Unknown Error")

    nvml = with_nvml(monkeypatch, NoCount({"00000000:18:00.0": (4, 4, 16)}))
    assert limits._nvml_link("0000:18:00.0") is None  # not even the first GPU is asked
    assert nvml.closed == 1


def sysfs_link(root: Path, address: str, speed: str, width: str) -> Path:
    folder = root / address
    folder.mkdir(parents=True)
    (folder / "max_link_speed").write_text(speed + "\n")
    (folder / "max_link_width").write_text(width + "\n")
    return root


def test_sysfs_gives_the_link_where_nvml_cannot(tmp_path: Path) -> None:
    root = sysfs_link(tmp_path, "0000:c1:00.0", "16.0 GT/s PCIe", "16")
    found = limits._sysfs_link("0000:c1:00.0", root)
    assert found is not None and found.value == pytest.approx(1.969 * 16)
    assert found.basis == "PCIe 16 GT/s x16, one direction (sysfs max_link_speed)"
    sysfs_link(tmp_path, "0000:c2:00.0", "Unknown", "16")
    assert limits._sysfs_link("0000:c2:00.0", root) is None
    assert limits._sysfs_link("0000:c3:00.0", root) is None


def test_the_host_link_limit_takes_nvml_then_sysfs_and_none_on_an_apu_or_grace(
    monkeypatch: pytest.MonkeyPatch, gpu: dict[str, Any], tmp_path: Path
) -> None:
    gpu["props"] = props(pci_domain_id=0, pci_bus_id=0x3B, pci_device_id=0)
    assert limits.bus_id(DEVICE) == "0000:3b:00.0"
    monkeypatch.setattr(limits.platform, "machine", lambda: "x86_64")
    with_nvml(monkeypatch, FakeNvml({"00000000:3b:00.0": (5, 5, 16)}))
    found = limits.host_link_limit(DEVICE)
    assert found is not None and found.value == pytest.approx(3.938 * 16) and "NVML" in found.basis
    # NVML without the GPU: sysfs says what the slot trained to at most
    with_nvml(monkeypatch, NvmlUnavailable("no driver", loaded=False))
    root = sysfs_link(tmp_path, "0000:3b:00.0", "8.0 GT/s PCIe", "16")
    monkeypatch.setattr(limits._sysfs_link, "__defaults__", (root,))
    found = limits.host_link_limit(DEVICE)
    assert found is not None and found.value == pytest.approx(0.985 * 16) and "sysfs" in found.basis
    # an impossible host copy is then over the limit: 20 GB/s on a Gen3 x16 link (15.76, plus its 10%)
    assert over_limit(20.0, "GB/s", found.value, found.basis) is not None
    assert over_limit(0.985 * 16 * 1.099, "GB/s", found.value, found.basis) is None
    # an APU's copies stay in one memory; Grace joins CPU and GPU by NVLink-C2C; a torch without bus ids
    gpu["props"] = props(pci_domain_id=0, pci_bus_id=0x3B, pci_device_id=0, is_integrated=1)
    assert limits.host_link_limit(DEVICE) is None
    gpu["props"] = props(pci_domain_id=0, pci_bus_id=0x3B, pci_device_id=0, is_integrated=0)
    assert limits.host_link_limit(DEVICE) is not None
    monkeypatch.setattr(limits.platform, "machine", lambda: "aarch64")
    assert limits.host_link_limit(DEVICE) is None
    monkeypatch.setattr(limits.platform, "machine", lambda: "x86_64")
    gpu["props"] = props()
    assert limits.bus_id(DEVICE) is None and limits.host_link_limit(DEVICE) is None


def test_the_sysfs_fallback_reads_the_real_pci_tree_by_default() -> None:
    assert limits._sysfs_link.__defaults__ == (limits.PCI_DEVICES,)
    assert str(limits.PCI_DEVICES) == "/sys/bus/pci/devices"
