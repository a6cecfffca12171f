"""NVIDIA readings through nvidia-ml-py (NVML creates no CUDA context, so the parent may use it)."""

from __future__ import annotations

from typing import Any

from .safe import safe
from .sample import GpuSample

# nvmlDeviceGetCurrentClocksEventReasons bits, in words.
CLOCK_EVENT_REASONS = {
    0x1: "idle",
    0x2: "application clock setting",
    0x4: "power cap",
    0x8: "hardware slowdown",
    0x10: "sync boost",
    0x20: "software thermal slowdown",
    0x40: "hardware thermal slowdown",
    0x80: "power brake",
    0x100: "display clock setting",
}
NVML_CLOCK_SM, NVML_CLOCK_MEM, NVML_TEMPERATURE_GPU = 1, 2, 0


def decode_reasons(mask: int | None) -> tuple[str, ...]:
    if not mask:
        return ()
    return tuple(word for bit, word in CLOCK_EVENT_REASONS.items() if mask & bit)


class NvmlSource:
    """Reads every NVIDIA GPU; `nvml` is the pynvml module, or a fake with the same functions."""

    vendor = "NVIDIA"

    def __init__(self, nvml: Any = None) -> None:
        if nvml is None:
            import pynvml as nvml
        self.nvml = nvml
        nvml.nvmlInit()
        self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        self.names = [str(safe(nvml.nvmlDeviceGetName, h) or "NVIDIA GPU") for h in self.handles]
        self.max_sm = [safe(nvml.nvmlDeviceGetMaxClockInfo, h, NVML_CLOCK_SM) for h in self.handles]
        self.limits = [safe(nvml.nvmlDeviceGetEnforcedPowerLimit, h, scale=1e-3) for h in self.handles]
        reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)

    def read(self) -> list[GpuSample]:
        nvml = self.nvml
        out = []
        for index, handle in enumerate(self.handles):
            memory = self._memory(handle)
            util = safe(nvml.nvmlDeviceGetUtilizationRates, handle)
            procs = safe(nvml.nvmlDeviceGetComputeRunningProcesses, handle) or []
            out.append(
                GpuSample(
                    index=index,
                    name=self.names[index],
                    vendor=self.vendor,
                    source="nvml",
                    sm_clock_mhz=safe(nvml.nvmlDeviceGetClockInfo, handle, NVML_CLOCK_SM),
                    mem_clock_mhz=safe(nvml.nvmlDeviceGetClockInfo, handle, NVML_CLOCK_MEM),
                    max_sm_clock_mhz=self.max_sm[index],
                    temperature_c=safe(nvml.nvmlDeviceGetTemperature, handle, NVML_TEMPERATURE_GPU),
                    power_w=safe(nvml.nvmlDeviceGetPowerUsage, handle, scale=1e-3),
                    power_limit_w=self.limits[index],
                    utilization_pct=getattr(util, "gpu", None),
                    memory_used=getattr(memory, "used", None),
                    memory_total=getattr(memory, "total", None),
                    throttle=decode_reasons(safe(self._reasons, handle) if self._reasons else None),
                    process_pids=tuple(int(p.pid) for p in procs),
                )
            )
        return out

    def _memory(self, handle: Any) -> Any:
        """Memory info v2 where the library has it: its `used` leaves out the driver's reservation,
        as nvidia-smi does (v1 counted about 615 MiB on an idle H200 that nvidia-smi shows as 0)."""
        version = getattr(self.nvml, "nvmlMemory_v2", None)
        if version is not None:
            memory = safe(lambda: self.nvml.nvmlDeviceGetMemoryInfo(handle, version=version))
            if memory is not None:
                return memory
        return safe(self.nvml.nvmlDeviceGetMemoryInfo, handle)

    def close(self) -> None:
        safe(self.nvml.nvmlShutdown)
