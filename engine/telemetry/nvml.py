"""NVIDIA readings through nvidia-ml-py (NVML creates no CUDA context, so the parent may use it)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from rigcheck.engine.telemetry.procnames import process_name
from rigcheck.engine.telemetry.safe import safe
from rigcheck.engine.telemetry.sample import GpuSample, ProcessUse, normalise_bus_id

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
UTIL_EVERY_S = 1.0  # per-process SM use is read once a second, over the second before


def decode_reasons(mask: int | None) -> tuple[str, ...]:
    if not mask:
        return ()
    return tuple(word for bit, word in CLOCK_EVENT_REASONS.items() if mask & bit)


class NvmlSource:
    """Reads every NVIDIA GPU; `nvml` is the pynvml module, or a fake with the same functions."""

    vendor = "NVIDIA"

    def __init__(
        self,
        nvml: Any = None,
        name_of: Callable[[int], str] = process_name,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if nvml is None:
            import pynvml as nvml
        self.nvml = nvml
        self.name_of = name_of
        self.clock = clock
        nvml.nvmlInit()
        self.handles = [nvml.nvmlDeviceGetHandleByIndex(i) for i in range(nvml.nvmlDeviceGetCount())]
        self.bus_ids = [
            normalise_bus_id(_text(getattr(safe(nvml.nvmlDeviceGetPciInfo, h), "busId", None))) for h in self.handles
        ]
        self.uuids = [_text(safe(nvml.nvmlDeviceGetUUID, h)) for h in self.handles]
        self._names: dict[int, str] = {}
        self._sm_pct: list[dict[int, float]] = [{} for _ in self.handles]
        self._util_at = float("-inf")
        self.names = [str(safe(nvml.nvmlDeviceGetName, h) or "NVIDIA GPU") for h in self.handles]
        self.max_sm = [safe(nvml.nvmlDeviceGetMaxClockInfo, h, NVML_CLOCK_SM) for h in self.handles]
        self.max_mem = [safe(nvml.nvmlDeviceGetMaxClockInfo, h, NVML_CLOCK_MEM) for h in self.handles]
        self.limits = [safe(nvml.nvmlDeviceGetEnforcedPowerLimit, h, scale=1e-3) for h in self.handles]
        reasons = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
        self._reasons = reasons or getattr(nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None)

    def read(self) -> list[GpuSample]:
        nvml = self.nvml
        now = self.clock()
        if now - self._util_at >= UTIL_EVERY_S:
            self._util_at = now
            self._sm_pct = [self._process_sm(handle, now - UTIL_EVERY_S) for handle in self.handles]
        out = []
        seen: set[int] = set()
        for index, handle in enumerate(self.handles):
            memory = self._memory(handle)
            util = safe(nvml.nvmlDeviceGetUtilizationRates, handle)
            procs = safe(nvml.nvmlDeviceGetComputeRunningProcesses, handle) or []
            uses = tuple(self._use(p, self._sm_pct[index]) for p in procs)
            seen.update(use.pid for use in uses)
            out.append(
                GpuSample(
                    index=index,
                    name=self.names[index],
                    vendor=self.vendor,
                    source="nvml",
                    sm_clock_mhz=safe(nvml.nvmlDeviceGetClockInfo, handle, NVML_CLOCK_SM),
                    mem_clock_mhz=safe(nvml.nvmlDeviceGetClockInfo, handle, NVML_CLOCK_MEM),
                    max_sm_clock_mhz=self.max_sm[index],
                    max_mem_clock_mhz=self.max_mem[index],
                    temperature_c=safe(nvml.nvmlDeviceGetTemperature, handle, NVML_TEMPERATURE_GPU),
                    power_w=safe(nvml.nvmlDeviceGetPowerUsage, handle, scale=1e-3),
                    power_limit_w=self.limits[index],
                    utilization_pct=getattr(util, "gpu", None),
                    memory_used=getattr(memory, "used", None),
                    memory_total=getattr(memory, "total", None),
                    throttle=decode_reasons(safe(self._reasons, handle) if self._reasons else None),
                    process_pids=tuple(use.pid for use in uses),
                    pci_bus_id=self.bus_ids[index],
                    uuid=self.uuids[index],
                    processes=uses,
                )
            )
        for gone in set(self._names) - seen:  # pids are reused: forget names of processes that left
            del self._names[gone]
        return out

    def _use(self, proc: Any, sm_pct: dict[int, float]) -> ProcessUse:
        pid = int(proc.pid)
        name = self._names.get(pid)
        if name is None:
            name = self._names[pid] = self.name_of(pid)
        memory = getattr(proc, "usedGpuMemory", None)  # None where the driver cannot say (no permission, MIG)
        return ProcessUse(pid, name, gpu_memory=int(memory) if memory is not None else None, sm_pct=sm_pct.get(pid))

    def _process_sm(self, handle: Any, since: float) -> dict[int, float]:
        """SM use per pid, the newest sample of each in the last second; the driver raises NotFound
        when it holds no sample that recent, and some GPUs do not support it: both read as unknown."""
        read = getattr(self.nvml, "nvmlDeviceGetProcessUtilization", None)
        samples = safe(read, handle, int(since * 1e6)) if read is not None else None
        newest: dict[int, tuple[int, float]] = {}
        for item in samples or []:
            pid, stamp = int(item.pid), int(getattr(item, "timeStamp", 0))
            if pid not in newest or stamp >= newest[pid][0]:
                newest[pid] = (stamp, float(item.smUtil))
        return {pid: value for pid, (_, value) in newest.items()}

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


def _text(value: Any) -> str | None:
    """NVML strings arrive as bytes in older bindings and as str in newer ones."""
    if value is None:
        return None
    return value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
