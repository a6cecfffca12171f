"""What a figure's GPU is made of, stamped on the figure itself: architecture, SM/CU count, maximum SM and memory
clocks and memory bus width, so the parent can derive its peaks (measure/arch_peaks.py) for any GPU the reference
table does not list. From torch's device properties, NVML (found by PCI bus id) or amdgpu's sysfs; never raises."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import torch
from rigcheck.engine.hw.nvml import CLOCK_MEM, CLOCK_SM, NvmlFailure, NvmlUnavailable, ok, open_nvml
from rigcheck.engine.hw.pci import normalise_bus_id, torch_bus_id

DRM = Path("/sys/class/drm")


def _top_mhz(path: Path) -> float | None:
    """The highest level of an amdgpu pp_dpm_* file ('2: 2100Mhz *')."""
    try:
        levels = [float(v) for v in re.findall(r"(\d+)\s*Mhz", path.read_text(), re.IGNORECASE)]
    except OSError:
        return None
    return max(levels) if levels else None


def _amd_clocks(address: str | None) -> dict[str, Any]:
    if not address:
        return {}
    for card in sorted(DRM.glob("card[0-9]*")):
        device = card / "device"
        try:
            if normalise_bus_id(device.resolve().name) != address:
                continue
        except (OSError, ValueError):
            continue
        return {
            "sm_clock_max_mhz": _top_mhz(device / "pp_dpm_sclk"),
            "mem_clock_max_mhz": _top_mhz(device / "pp_dpm_mclk"),
        }
    return {}


def _nvidia_clocks(address: str | None) -> dict[str, Any]:
    if not address:
        return {}
    nvml = open_nvml()
    if isinstance(nvml, NvmlUnavailable):
        return {}
    try:
        for index in range(ok(nvml.count()) or 0):
            handle = nvml.handle(index)
            pci = nvml.pci_info(handle) if not isinstance(handle, NvmlFailure) else handle
            if isinstance(pci, NvmlFailure) or normalise_bus_id(pci.bus_id) != address:
                continue
            return {
                "sm_clock_max_mhz": ok(nvml.max_clock(handle, CLOCK_SM)),
                "mem_clock_max_mhz": ok(nvml.max_clock(handle, CLOCK_MEM)),
                "memory_bus_bits": ok(nvml.memory_bus_width(handle)),
            }
        return {}
    finally:
        nvml.close()


@functools.cache
def _facts(index: int) -> tuple[tuple[str, Any], ...]:
    try:
        props = torch.cuda.get_device_properties(index)
        hip = getattr(torch.version, "hip", None)
        arch = (getattr(props, "gcnArchName", "") or "").split(":")[0] if hip else f"sm_{props.major}{props.minor}"
        address = torch_bus_id(props)
        facts: dict[str, Any] = {
            "gpu_name": props.name,
            "gpu_arch": arch,
            "gpu_units": props.multi_processor_count,
            "memory_bus_bits": getattr(props, "memory_bus_width", None),
        }
        found = _amd_clocks(address) if hip else _nvidia_clocks(address)
        facts |= {k: v for k, v in found.items() if v}
    except Exception:  # a device facts reader never fails a figure: the parent says what it could not derive
        return ()
    return tuple(facts.items())


def device_facts(device: torch.device) -> dict[str, Any]:
    """The figure's params for its device's peaks; empty on the CPU or where torch could not say."""
    if device.type != "cuda":
        return {}
    index = device.index if device.index is not None else torch.cuda.current_device()
    return dict(_facts(index))
