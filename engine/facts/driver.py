"""The GPU driver's version, whichever vendor's driver is loaded."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.facts.amd_driver import rocm_version
from rigcheck.engine.facts.nvidia_driver import nvidia_driver, proc_driver_version
from rigcheck.engine.hw.amdgpu import amdgpu_module_version


def driver_facts(torch: Any) -> dict[str, Any]:
    if getattr(torch.version, "hip", None):
        return {
            "vendor": "AMD",
            "amdgpu_module": amdgpu_module_version(),
            "rocm": rocm_version(),
            "version": amdgpu_module_version() or rocm_version(),
        }
    nvml = nvidia_driver()
    version = nvml.get("driver_version") or proc_driver_version()
    return {"vendor": "NVIDIA" if version else None, "version": version, "nvml": nvml}
