"""NVIDIA GPU health through NVML: ECC, retired pages or remapped rows, XIDs, PCIe link, power, idle clocks, MIG.

`nvml` is anything with pynvml's call shapes: the ctypes binding by default (no nvidia-ml-py needed
in the stage child), or a fake in tests.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from typing import Any

from rigcheck.engine.facts.health_model import GpuHealth, Missing, bus_id_from_text
from rigcheck.engine.facts.nvml_ctypes import FUNCTION_NOT_FOUND, NO_PERMISSION, NOT_SUPPORTED, CtypesNvml
from rigcheck.engine.facts.xid import read_kmsg, xids_by_bus
from rigcheck.engine.telemetry.nvml import decode_reasons

CORRECTED, UNCORRECTED = 0, 1
VOLATILE, AGGREGATE = 0, 1
MULTIPLE_SBE, DOUBLE_BIT = 0, 1
FABRIC_STATES = {0: "not supported", 1: "not started", 2: "in progress", 3: "completed"}


def missing_because(what: str, error: Exception) -> Missing:
    code = getattr(error, "value", None)
    if code == NOT_SUPPORTED:
        return Missing(f"the driver does not offer {what} on this GPU (NVML: not supported)")
    if code == NO_PERMISSION:
        return Missing(f"reading {what} needs more privilege than this user has")
    if code == FUNCTION_NOT_FOUND:
        return Missing(f"this driver's NVML has no call for {what}")
    return Missing(f"NVML could not read {what}: {error}")


class NvidiaHealthReader:
    vendor = "NVIDIA"

    def __init__(self, nvml: Any = None, kernel_log: Callable[[], list[str] | Missing] = read_kmsg) -> None:
        self.nvml = nvml if nvml is not None else CtypesNvml()
        self.nvml.nvmlInit()
        self.handles: list[Any] = []
        for index in range(self.nvml.nvmlDeviceGetCount()):
            try:
                self.handles.append(self.nvml.nvmlDeviceGetHandleByIndex(index))
            except Exception as error:  # a GPU the driver lists but cannot reach (fallen off the bus)
                self.handles.append(error)
        self.kernel_log = kernel_log

    def _get(self, what: str, call: Callable[..., Any], *args: Any) -> Any:
        try:
            return call(*args)
        except Exception as error:
            return missing_because(what, error)

    def devices(self) -> list[GpuHealth]:
        log = self.kernel_log()
        xids = xids_by_bus(log) if isinstance(log, list) else log
        return [self._read(index, handle, xids) for index, handle in enumerate(self.handles)]

    def _read(self, index: int, handle: Any, xids: dict[str, Counter[int]] | Missing) -> GpuHealth:
        if isinstance(handle, Exception):
            return GpuHealth(index, "NVIDIA GPU", self.vendor, None, extra={"unreachable": str(handle)})
        nv = self.nvml
        name = self._get("the name", nv.nvmlDeviceGetName, handle)
        pci = self._get("the PCI address", nv.nvmlDeviceGetPciInfo, handle)
        bus = None if isinstance(pci, Missing) else bus_id_from_text(str(pci.busId))
        mode = self._get("ECC mode", nv.nvmlDeviceGetEccMode, handle)
        ecc_enabled = mode if isinstance(mode, Missing) else bool(mode[0])
        return GpuHealth(
            index=index,
            name=name if isinstance(name, str) else "NVIDIA GPU",
            vendor=self.vendor,
            bus_id=bus,
            ecc_enabled=ecc_enabled,
            ecc=self._ecc(handle, ecc_enabled),
            retired_pages=self._retired(handle),
            row_remap=self._remap(handle),
            xid=_xid_for(bus, xids),
            pcie=self.pcie(index),
            persistence=_map(self._get("persistence mode", nv.nvmlDeviceGetPersistenceMode, handle), bool),
            power=self._power(handle),
            idle_clocks=self._idle(handle),
            partition=self._mig(handle),
            fabric=self._fabric(handle),
        )

    def _ecc(self, handle: Any, enabled: bool | Missing) -> dict[str, int] | Missing:
        if enabled is False:
            return Missing("ECC is switched off, so the driver counts no memory errors")
        counts: dict[str, int] = {}
        reasons = []
        for counter, counter_name in ((VOLATILE, "volatile"), (AGGREGATE, "aggregate")):
            for kind, kind_name in ((CORRECTED, "corrected"), (UNCORRECTED, "uncorrected")):
                what = f"{counter_name} {kind_name} ECC errors"
                value = self._get(what, self.nvml.nvmlDeviceGetTotalEccErrors, handle, kind, counter)
                if isinstance(value, Missing):
                    reasons.append(value.why)
                else:
                    counts[f"{counter_name}_{kind_name}"] = int(value)
        return counts or Missing(reasons[0])

    def _retired(self, handle: Any) -> dict[str, int] | Missing:
        nv = self.nvml
        sbe = self._get("retired pages", nv.nvmlDeviceGetRetiredPages, handle, MULTIPLE_SBE)
        if isinstance(sbe, Missing):
            return sbe
        dbe = self._get("retired pages", nv.nvmlDeviceGetRetiredPages, handle, DOUBLE_BIT)
        pending = self._get("pending page retirement", nv.nvmlDeviceGetRetiredPagesPendingStatus, handle)
        return {
            "retired_sbe": len(sbe),
            "retired_dbe": 0 if isinstance(dbe, Missing) else len(dbe),
            "pending": 0 if isinstance(pending, Missing) else int(bool(pending)),
        }

    def _remap(self, handle: Any) -> dict[str, int] | Missing:
        rows = self._get("row remapping", self.nvml.nvmlDeviceGetRemappedRows, handle)
        if isinstance(rows, Missing):
            return rows
        correctable, uncorrectable, pending, failure = rows
        return {
            "correctable": int(correctable),
            "uncorrectable": int(uncorrectable),
            "pending": int(bool(pending)),
            "failure": int(bool(failure)),
        }

    def pcie(self, index: int) -> dict[str, int] | Missing:
        nv, handle = self.nvml, self.handles[index]
        if isinstance(handle, Exception):
            return Missing(f"the driver cannot reach this GPU: {handle}")
        values = {}
        for key, call in (
            ("gen", nv.nvmlDeviceGetCurrPcieLinkGeneration),
            ("max_gen", nv.nvmlDeviceGetMaxPcieLinkGeneration),
            ("width", nv.nvmlDeviceGetCurrPcieLinkWidth),
            ("max_width", nv.nvmlDeviceGetMaxPcieLinkWidth),
        ):
            value = self._get("the PCIe link state", call, handle)
            if isinstance(value, Missing):
                return value
            values[key] = int(value)
        gpu_max = self._get("the GPU's own PCIe generation", nv.nvmlDeviceGetGpuMaxPcieLinkGeneration, handle)
        if not isinstance(gpu_max, Missing):
            values["gpu_max_gen"] = int(gpu_max)
        return values

    def _power(self, handle: Any) -> dict[str, float] | Missing:
        nv = self.nvml
        limit = self._get("the power limit", nv.nvmlDeviceGetPowerManagementLimit, handle)
        if isinstance(limit, Missing):
            return limit
        out = {"limit_w": limit / 1000}
        default = self._get("the default power limit", nv.nvmlDeviceGetPowerManagementDefaultLimit, handle)
        bounds = self._get("the power limit range", nv.nvmlDeviceGetPowerManagementLimitConstraints, handle)
        enforced = self._get("the enforced power limit", nv.nvmlDeviceGetEnforcedPowerLimit, handle)
        if not isinstance(default, Missing):
            out["default_w"] = default / 1000
        if not isinstance(bounds, Missing):
            out["min_w"], out["max_w"] = bounds[0] / 1000, bounds[1] / 1000
        if not isinstance(enforced, Missing):
            out["enforced_w"] = enforced / 1000
        return out

    def _idle(self, handle: Any) -> dict[str, Any] | Missing:
        nv = self.nvml
        mask = self._get("clock event reasons", nv.nvmlDeviceGetCurrentClocksEventReasons, handle)
        if isinstance(mask, Missing):
            return mask
        util = self._get("utilization", nv.nvmlDeviceGetUtilizationRates, handle)
        return {
            "reasons": list(decode_reasons(int(mask))),
            "mask": int(mask),
            "utilization_pct": None if isinstance(util, Missing) else int(util.gpu),
        }

    def _mig(self, handle: Any) -> dict[str, Any] | Missing:
        mode = self._get("MIG mode", self.nvml.nvmlDeviceGetMigMode, handle)
        if isinstance(mode, Missing):
            return Missing(mode.why.replace("does not offer MIG mode", "has no MIG"))
        return {
            "kind": "MIG",
            "current": "enabled" if mode[0] else "disabled",
            "pending": "enabled" if mode[1] else "disabled",
        }

    def _fabric(self, handle: Any) -> dict[str, Any] | Missing:
        info = self._get("NVSwitch fabric state", self.nvml.nvmlDeviceGetGpuFabricInfo, handle)
        if isinstance(info, Missing):
            return info
        if info.state == 0:
            return Missing("this GPU is not attached to an NVSwitch fabric (NVML: not supported)")
        return {"state": FABRIC_STATES.get(info.state, str(info.state)), "status": int(info.status)}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.nvml.nvmlShutdown()


def _map(value: Any, kind: Callable[[Any], Any]) -> Any:
    return value if isinstance(value, Missing) else kind(value)


def _xid_for(bus: str | None, xids: dict[str, Counter[int]] | Missing) -> dict[str, Any] | Missing:
    if isinstance(xids, Missing):
        return xids
    if bus is None:
        return Missing("the GPU's PCI address is unknown, so kernel-log XIDs cannot be matched to it")
    return {"codes": dict(sorted(xids.get(bus, Counter()).items()))}
