"""What the NVIDIA driver itself reports (version, per-GPU memory), through hw.nvml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rigcheck.engine.hw.nvml import CLOCK_MEM, CLOCK_SM, NvmlFailure, NvmlUnavailable, ok, open_nvml
from rigcheck.engine.hw.sysfs import read_text

PROC_VERSION = Path("/proc/driver/nvidia/version")


def nvidia_driver(library: str | None = None) -> dict[str, Any]:
    """Driver version, CUDA driver API version and every GPU's name, UUID and memory, or a reason."""
    nvml = open_nvml(library)
    if isinstance(nvml, NvmlUnavailable):
        reason = "nvmlInit failed" if nvml.loaded else f"NVML not loadable: {nvml.text}"
        return {"available": False, "reason": reason}
    try:
        facts: dict[str, Any] = {"available": True}
        facts["driver_version"] = ok(nvml.driver_version())
        cuda = ok(nvml.cuda_driver_version())
        if cuda is not None:
            facts["cuda_driver_api"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
        devices = []
        for index in range(ok(nvml.count()) or 0):
            handle = nvml.handle(index)
            if isinstance(handle, NvmlFailure):
                continue
            memory = ok(nvml.memory(handle))  # v1, whose `used` counts the driver's reservation
            devices.append(
                {
                    "index": index,
                    "name": ok(nvml.name(handle)),
                    "uuid": ok(nvml.uuid(handle)),
                    "memory_total": memory.total if memory else None,
                    "memory_used": memory.used if memory else None,
                    "persistence": ok(nvml.persistence_mode(handle)),  # 0 off, 1 on (the settings table's)
                    # with the SM count, what its peaks are derived from (measure/arch_peaks.py)
                    "sm_clock_max_mhz": ok(nvml.max_clock(handle, CLOCK_SM)),
                    "mem_clock_max_mhz": ok(nvml.max_clock(handle, CLOCK_MEM)),
                    "memory_bus_bits": ok(nvml.memory_bus_width(handle)),
                }
            )
        facts["devices"] = devices
        return facts
    finally:
        nvml.close()


def proc_driver_version(path: Path = PROC_VERSION) -> str | None:
    first = (read_text(path) or "").splitlines()[:1]
    parts = first[0].split() if first else []
    return next((p for p in parts if p[:1].isdigit() and "." in p), None)
