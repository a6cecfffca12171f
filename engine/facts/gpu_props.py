"""What each present GPU is made of, read without torch: architecture, SM/CU count, maximum clocks, memory bus
width (NVML; amdgpu's KFD topology, through hw/kfd.py), so `rigcheck references` can show every figure's
expectation for a GPU the reference table does not list (engine/measure/arch_peaks.py derives its peaks)."""

from __future__ import annotations

from pathlib import Path

from rigcheck.engine.hw.kfd import KFD_NODES, kfd_gpus
from rigcheck.engine.hw.nvml import CLOCK_MEM, CLOCK_SM, NvmlFailure, NvmlUnavailable, ok, open_nvml
from rigcheck.engine.hw.pci import normalise_bus_id
from rigcheck.engine.measure.arch_peaks import DeviceProps, arch_entry


def _sms(arch: str, cores: int | None) -> int | None:
    """SMs from NVML's FP32 lane count: the architecture's fp32 FLOP per clock per SM is two per lane."""
    entry = arch_entry(arch)
    lanes = entry["rates"].get("fp32", 0) // 2 if entry else 0
    return cores // lanes if cores and lanes else None


def nvidia_props(library: str | None = None) -> dict[str, DeviceProps]:
    """By normalised PCI bus id, every GPU NVML lists."""
    found: dict[str, DeviceProps] = {}
    nvml = open_nvml(library)
    if isinstance(nvml, NvmlUnavailable):
        return found
    try:
        for index in range(ok(nvml.count()) or 0):
            handle = nvml.handle(index)
            pci = nvml.pci_info(handle) if not isinstance(handle, NvmlFailure) else handle
            if isinstance(pci, NvmlFailure) or isinstance(handle, NvmlFailure):
                continue
            capability = ok(nvml.cuda_capability(handle))
            arch = f"sm_{capability[0]}{capability[1]}" if capability else ""
            address = normalise_bus_id(pci.bus_id)
            if address is None:
                continue
            found[address] = DeviceProps(
                ok(nvml.name(handle)) or "NVIDIA GPU",
                arch,
                _sms(arch, ok(nvml.gpu_cores(handle))),
                ok(nvml.max_clock(handle, CLOCK_SM)),
                ok(nvml.max_clock(handle, CLOCK_MEM)),
                ok(nvml.memory_bus_width(handle)),
            )
    finally:
        nvml.close()
    return found


def amd_props(nodes: Path = KFD_NODES, names: dict[str, str] | None = None) -> dict[str, DeviceProps]:
    """By PCI bus id, every GPU node of amdgpu's KFD topology."""
    return {
        bus: DeviceProps(
            (names or {}).get(bus, "AMD GPU"), g.gfx, g.compute_units, g.sclk_max_mhz, g.mclk_max_mhz, g.bus_bits
        )
        for bus, g in kfd_gpus(nodes).items()
    }
