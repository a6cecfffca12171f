"""What each present GPU is made of, read without torch: architecture, SM/CU count, maximum clocks, memory bus
width (NVML; amdgpu's KFD topology), so `rigcheck references` can show every figure's expectation for a GPU the
reference table does not list (engine/measure/arch_peaks.py derives its peaks). Never raises."""

from __future__ import annotations

from pathlib import Path

from rigcheck.engine.hw.nvml import CLOCK_MEM, CLOCK_SM, NvmlFailure, NvmlUnavailable, ok, open_nvml
from rigcheck.engine.hw.pci import normalise_bus_id
from rigcheck.engine.hw.sysfs import read_text
from rigcheck.engine.measure.arch_peaks import DeviceProps, arch_entry

KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")


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
            found[normalise_bus_id(pci.bus_id)] = DeviceProps(
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


def _properties(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in (read_text(path) or "").splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[key] = int(value)
    return out


def gfx_target(version: int) -> str:
    """KFD's gfx_target_version (90402, 110501) as a gfx target (gfx942, gfx1151)."""
    return f"gfx{version // 10000}{(version // 100) % 100:x}{version % 100:x}" if version else ""


def amd_props(nodes: Path = KFD_NODES, names: dict[str, str] | None = None) -> dict[str, DeviceProps]:
    """By PCI bus id, every GPU node of amdgpu's KFD topology (CPU nodes have no SIMDs)."""
    found: dict[str, DeviceProps] = {}
    for node in sorted(nodes.glob("[0-9]*")) if nodes.is_dir() else []:
        p = _properties(node / "properties")
        if not p.get("simd_count") or not p.get("simd_per_cu"):
            continue
        location = p.get("location_id", 0)
        bus = f"{p.get('domain', 0):04x}:{location >> 8:02x}:{(location >> 3) & 0x1F:02x}.{location & 0x7}"
        memory = _properties(node / "mem_banks" / "0" / "properties")
        found[bus] = DeviceProps(
            (names or {}).get(bus, "AMD GPU"),
            gfx_target(p.get("gfx_target_version", 0)),
            p["simd_count"] // p["simd_per_cu"],
            p.get("max_engine_clk_fcompute") or None,
            memory.get("mem_clk_max") or None,
            memory.get("width") or None,
        )
    return found
