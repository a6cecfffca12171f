"""Clocks, heat, power and throttle reasons sampled inside the burn's child, so its verdict can name a cause.

The parent also attaches telemetry to every measurement; this copy exists because the verdicts are
made in the child. NVIDIA through hw.nvml (sensors only, no process lists), AMD through sysfs; none on the CPU.
"""

from __future__ import annotations

import contextlib
import statistics
import threading
import time
from typing import Any

from rigcheck.engine.hw.devices import nvml_index
from rigcheck.engine.hw.pci import normalise_bus_id, torch_bus_id
from rigcheck.engine.telemetry.nvml import NvmlSource
from rigcheck.engine.telemetry.sample import GpuSample
from rigcheck.engine.telemetry.sysfs import AmdSysfsSource

INTERVAL_S = 0.5


def _open_source() -> tuple[Any, list[str | None]] | None:
    """A telemetry source and each of its GPUs' bus ids, or None on a host without one."""
    try:
        source = NvmlSource(processes=False)
        return source, list(source.bus_ids)
    except Exception:
        pass
    try:
        amd = AmdSysfsSource()
        return amd, [normalise_bus_id(address) for address in amd.addresses]
    except Exception:
        return None


class ChildTelemetry:
    def __init__(self, source: Any, indexes: dict[str, int], interval: float = INTERVAL_S) -> None:
        self.source, self.indexes, self.interval = source, indexes, interval  # indexes: "cuda:N" -> source index
        self.samples: list[tuple[float, tuple[GpuSample, ...]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="burn-telemetry", daemon=True)

    @classmethod
    def open(cls, torch: Any, devices: list[Any]) -> ChildTelemetry | None:
        gpus = [d for d in devices if d.type == "cuda"]
        found = _open_source() if gpus else None
        if found is None:
            return None
        source, buses = found
        indexes = {}
        for device in gpus:
            bus = torch_bus_id(torch.cuda.get_device_properties(device))
            if bus is not None and bus in buses:
                indexes[str(device)] = buses.index(bus)
            elif bus is None and source.vendor == "NVIDIA":  # a torch without PCI ids: NVML's own order
                index = nvml_index(str(device))
                if index is not None and index < len(buses):
                    indexes[str(device)] = index
        return cls(source, indexes) if indexes else None

    def start(self) -> ChildTelemetry:
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.is_set():
            with contextlib.suppress(Exception):  # a sensor that fails is a gap, never an error
                self.samples.append((time.time(), tuple(self.source.read())))
            self._stop.wait(self.interval)

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        close = getattr(self.source, "close", None)
        if close is not None:
            close()

    def summary(self, device: str, t0: float, t1: float) -> dict[str, Any]:
        """Mean SM clock, hottest temperature, mean power, the power limit against the board's default and
        maximum, and every throttle reason seen in [t0, t1]."""
        index = self.indexes.get(device)
        gpus = [g for t, sample in self.samples if t0 <= t <= t1 for g in sample if g.index == index]
        if not gpus:
            return {}
        clocks = [g.sm_clock_mhz for g in gpus if g.sm_clock_mhz is not None]
        temps = [g.temperature_c for g in gpus if g.temperature_c is not None]
        power = [g.power_w for g in gpus if g.power_w is not None]
        return {
            "sm_clock_mean_mhz": round(statistics.fmean(clocks), 1) if clocks else None,
            "sm_clock_max_mhz": gpus[0].max_sm_clock_mhz,
            "temperature_max_c": max(temps) if temps else None,
            "power_mean_w": round(statistics.fmean(power), 1) if power else None,
            "power_limit_w": gpus[0].power_limit_w,
            "power_default_limit_w": gpus[0].power_default_limit_w,
            "power_max_limit_w": gpus[0].power_max_limit_w,
            "vendor": gpus[0].vendor,
            "throttle": sorted({r for g in gpus for r in g.throttle}),
        }
