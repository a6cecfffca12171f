"""NVIDIA readings through hw.nvml (NVML creates no CUDA context, so the parent may use it), in telemetry's units."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

from rigcheck.engine.hw.nvml import (
    CLOCK_MEM,
    CLOCK_SM,
    TEMPERATURE_GPU,
    NvmlFailure,
    NvmlUnavailable,
    decode_reasons,
    ok,
    open_nvml,
)
from rigcheck.engine.hw.pci import normalise_bus_id
from rigcheck.engine.telemetry.procnames import process_name
from rigcheck.engine.telemetry.sample import GpuSample, ProcessUse

UTIL_EVERY_S = 1.0  # per-process SM use is read once a second, over the second before
NOT_FOUND = 6  # per-process utilization: the driver holds no sample that recent (no process worked)


def pid_visible(pid: int) -> bool:
    """Whether this PID namespace has the pid: the driver also lists processes of other containers."""
    if os.path.isdir("/proc/self"):
        return os.path.exists(f"/proc/{pid}")
    try:
        import psutil

        return bool(psutil.pid_exists(pid))
    except Exception:
        return True  # nothing to tell by: never call a process unseen without evidence


def _watts(milliwatts: int | NvmlFailure) -> float | None:
    value = ok(milliwatts)
    return None if value is None else value * 1e-3


def _max_limit(answer: tuple[int, int] | NvmlFailure) -> float | None:
    bounds = ok(answer)
    return None if bounds is None else bounds[1] * 1e-3


class NvmlSource:
    """Reads every NVIDIA GPU; `nvml` is an opened hw.nvml.Nvml (opened here when None), or a fake with
    its calls. `processes=False` leaves out the process lists (a stage child needs only the sensors)."""

    vendor = "NVIDIA"

    def __init__(
        self,
        nvml: Any = None,
        name_of: Callable[[int], str] = process_name,
        clock: Callable[[], float] = time.time,
        processes: bool = True,
        visible: Callable[[int], bool] | None = None,
    ) -> None:
        if nvml is None:
            opened = open_nvml()
            if isinstance(opened, NvmlUnavailable):
                raise RuntimeError(f"NVML not usable: {opened.text}")
            nvml = opened
        self.nvml = nvml
        self.name_of = name_of
        self.clock = clock
        self.processes = processes
        self.visible = visible  # None: a pid whose name was read, or that /proc has, is visible
        count = nvml.count()
        handles = [nvml.handle(i) for i in range(count)] if not isinstance(count, NvmlFailure) else [count]
        failed = next((h for h in handles if isinstance(h, NvmlFailure)), None)
        if failed is not None:
            nvml.close()
            raise RuntimeError(f"NVML cannot list the GPUs: {failed}")
        self.handles = handles
        self.bus_ids = [normalise_bus_id(getattr(ok(nvml.pci_info(h)), "bus_id", None)) for h in handles]
        self.uuids = [ok(nvml.uuid(h)) for h in handles]
        self._names: dict[int, tuple[str, bool]] = {}  # pid -> (name, visible in this PID namespace)
        self._sm_pct: list[dict[int, float] | None] = [None for _ in handles]
        self._util_at = float("-inf")
        self.names = [str(ok(nvml.name(h)) or "NVIDIA GPU") for h in handles]
        self.max_sm = [ok(nvml.max_clock(h, CLOCK_SM)) for h in handles]
        self.max_mem = [ok(nvml.max_clock(h, CLOCK_MEM)) for h in handles]
        self.limits = [_watts(nvml.enforced_power_limit(h)) for h in handles]
        self.default_limits = [_watts(nvml.default_power_limit(h)) for h in handles]
        self.max_limits = [_max_limit(nvml.power_limit_range(h)) for h in handles]

    def read(self) -> list[GpuSample]:
        nvml = self.nvml
        now = self.clock()
        if self.processes and now - self._util_at >= UTIL_EVERY_S:
            self._util_at = now
            self._sm_pct = [self._process_sm(handle, now - UTIL_EVERY_S) for handle in self.handles]
        out = []
        seen: set[int] = set()
        for index, handle in enumerate(self.handles):
            # v2 where the driver has it: v1's `used` counts the driver's reservation (about 615 MiB on an
            # idle H200 that nvidia-smi shows as 0)
            memory_v2 = ok(nvml.memory_v2(handle))
            memory = memory_v2 or ok(nvml.memory(handle))
            util = ok(nvml.utilization(handle))
            sm_pct = self._sm_pct[index]
            uses = tuple(self._use(p, sm_pct or {}) for p in self._listed(handle)) if self.processes else ()
            seen.update(use.pid for use in uses)
            out.append(
                GpuSample(
                    index=index,
                    name=self.names[index],
                    vendor=self.vendor,
                    source="nvml",
                    sm_clock_mhz=ok(nvml.clock(handle, CLOCK_SM)),
                    mem_clock_mhz=ok(nvml.clock(handle, CLOCK_MEM)),
                    max_sm_clock_mhz=self.max_sm[index],
                    max_mem_clock_mhz=self.max_mem[index],
                    temperature_c=ok(nvml.temperature(handle, TEMPERATURE_GPU)),
                    power_w=_watts(nvml.power_usage(handle)),
                    power_limit_w=self.limits[index],
                    power_default_limit_w=self.default_limits[index],
                    power_max_limit_w=self.max_limits[index],
                    utilization_pct=getattr(util, "gpu", None),
                    memory_used=getattr(memory, "used", None),
                    memory_total=getattr(memory, "total", None),
                    throttle=decode_reasons(ok(nvml.clock_event_reasons(handle))),
                    process_pids=tuple(use.pid for use in uses),
                    pci_bus_id=self.bus_ids[index],
                    uuid=self.uuids[index],
                    processes=uses,
                    memory_unlisted=_unlisted(memory_v2, uses) if self.processes else None,
                    unseen_pids=tuple(use.pid for use in uses if not self._names[use.pid][1]),
                    sm_by_pid=None if sm_pct is None or not self.processes else tuple(sorted(sm_pct.items())),
                )
            )
        for gone in set(self._names) - seen:  # pids are reused: forget names of processes that left
            del self._names[gone]
        return out

    def _listed(self, handle: Any) -> list[Any]:
        """The compute and the graphics processes, one entry per pid (a process may be in both lists)."""
        found: dict[int, Any] = {}
        graphics = getattr(self.nvml, "graphics_processes", None)
        for answer in (self.nvml.compute_processes(handle), graphics(handle) if graphics else []):
            for proc in ok(answer) or []:
                found.setdefault(int(proc.pid), proc)
        return list(found.values())

    def _use(self, proc: Any, sm_pct: dict[int, float]) -> ProcessUse:
        pid = int(proc.pid)
        known = self._names.get(pid)
        if known is None:
            name = self.name_of(pid)
            seen = self.visible(pid) if self.visible is not None else name != "?" or pid_visible(pid)
            known = self._names[pid] = (name, seen)
        memory = proc.used_gpu_memory  # None where the driver cannot say (no permission, MIG)
        return ProcessUse(pid, known[0], gpu_memory=int(memory) if memory is not None else None, sm_pct=sm_pct.get(pid))

    def _process_sm(self, handle: Any, since: float) -> dict[int, float] | None:
        """SM use per pid, the newest sample of each in the last second. The driver answers NotFound when
        it holds no sample that recent (no process worked: an empty answer); a GPU that does not support
        it, or any other failure, is None (unknown)."""
        answer = self.nvml.process_utilization(handle, int(since * 1e6))
        if isinstance(answer, NvmlFailure):
            return {} if answer.code == NOT_FOUND else None
        newest: dict[int, tuple[int, float]] = {}
        for item in answer:
            pid, stamp = int(item.pid), int(item.time_stamp)
            if pid not in newest or stamp >= newest[pid][0]:
                newest[pid] = (stamp, float(item.sm_util))
        return {pid: value for pid, (_, value) in newest.items()}

    def close(self) -> None:
        self.nvml.close()


def _unlisted(memory_v2: Any, uses: tuple[ProcessUse, ...]) -> int | None:
    """Device memory in use beyond every listed process's own: v2's `used` only (v1 counts the driver's
    reservation), and only where the driver gave each listed process's memory."""
    if memory_v2 is None or any(use.gpu_memory is None for use in uses):
        return None
    return max(0, int(memory_v2.used) - sum(use.gpu_memory or 0 for use in uses))
