"""What a figure's GPU is made of, stamped on the figure itself: architecture, SM/CU count, maximum SM and memory
clocks and memory bus width, so the parent can derive its peaks (measure/arch_peaks.py) for any GPU the reference
table does not list. From torch's device properties, NVML (found by PCI bus id) or amdgpu's KFD topology;
never raises."""

from __future__ import annotations

import functools
from typing import Any

import torch
from rigcheck.engine.facts.gpu_props import amd_props
from rigcheck.engine.hw.gpu_at import gpu_at
from rigcheck.engine.hw.nvml import CLOCK_MEM, CLOCK_SM, NvmlUnavailable, ok, open_nvml
from rigcheck.engine.hw.pci import torch_bus_id


def _amd_clocks(address: str | None) -> dict[str, Any]:
    """From amdgpu's KFD topology: the top engine and memory clocks and the memory bus width."""
    found = amd_props().get(address or "")
    if found is None:
        return {}
    return {
        "sm_clock_max_mhz": found.sm_clock_max_mhz,
        "mem_clock_max_mhz": found.mem_clock_max_mhz,
        "memory_bus_bits": found.memory_bus_bits,
    }


def _nvidia_clocks(address: str | None) -> dict[str, Any]:
    if not address:
        return {}
    nvml = open_nvml()
    if isinstance(nvml, NvmlUnavailable):
        return {}
    try:
        handle = gpu_at(nvml, address)  # hw/ owns a GPU's identity by bus id: None where NVML cannot place it
        if handle is None:
            return {}
        return {
            "sm_clock_max_mhz": ok(nvml.max_clock(handle, CLOCK_SM)),
            "mem_clock_max_mhz": ok(nvml.max_clock(handle, CLOCK_MEM)),
            "memory_bus_bits": ok(nvml.memory_bus_width(handle)),
        }
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
