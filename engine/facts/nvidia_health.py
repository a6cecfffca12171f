"""NVIDIA GPU health through NVML: ECC, retired pages or remapped rows, XIDs, PCIe link, power, idle clocks, MIG.

`nvml` is an opened hw.nvml.Nvml (opened here by default), or a fake with its calls in tests.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from rigcheck.engine.facts.health_model import GpuHealth, Missing
from rigcheck.engine.facts.xid import read_kmsg, xids_by_bus
from rigcheck.engine.hw.nvml import (
    FUNCTION_NOT_FOUND,
    NO_PERMISSION,
    NOT_SUPPORTED,
    NvmlFailure,
    NvmlUnavailable,
    decode_reasons,
    open_nvml,
)
from rigcheck.engine.hw.pci import normalise_bus_id

CORRECTED, UNCORRECTED = 0, 1
VOLATILE, AGGREGATE = 0, 1
MULTIPLE_SBE, DOUBLE_BIT = 0, 1
FABRIC_STATES = {0: "not supported", 1: "not started", 2: "in progress", 3: "completed"}


class NvmlBroken(Exception):
    """The library is there but NVML fails to start or to count its GPUs (e.g. a driver upgraded without a reboot)."""


def missing_because(what: str, error: NvmlFailure) -> Missing:
    code = error.code
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
        """Raises OSError where there is no NVML library, NvmlBroken where it is there and fails."""
        if nvml is None:
            opened = open_nvml()
            if isinstance(opened, NvmlUnavailable):
                raise NvmlBroken(opened.text) if opened.loaded else OSError(opened.text)
            nvml = opened
        self.nvml = nvml
        count = nvml.count()
        if isinstance(count, NvmlFailure):
            nvml.close()
            raise NvmlBroken(count.text)
        # a GPU the driver lists but cannot reach (fallen off the bus) keeps its place as an NvmlFailure
        self.handles: list[Any] = [nvml.handle(index) for index in range(count)]
        self.kernel_log = kernel_log

    def _get(self, what: str, answer: Any) -> Any:
        return missing_because(what, answer) if isinstance(answer, NvmlFailure) else answer

    def devices(self) -> list[GpuHealth]:
        log = self.kernel_log()
        xids = xids_by_bus(log) if isinstance(log, list) else log
        return [self._read(index, handle, xids) for index, handle in enumerate(self.handles)]

    def _read(self, index: int, handle: Any, xids: dict[str, Counter[int]] | Missing) -> GpuHealth:
        if isinstance(handle, NvmlFailure):
            return GpuHealth(index, "NVIDIA GPU", self.vendor, None, extra={"unreachable": str(handle)})
        nv = self.nvml
        name = self._get("the name", nv.name(handle))
        pci = self._get("the PCI address", nv.pci_info(handle))
        bus = None if isinstance(pci, Missing) else normalise_bus_id(pci.bus_id)
        mode = self._get("ECC mode", nv.ecc_mode(handle))
        ecc_enabled = mode if isinstance(mode, Missing) else bool(mode[0])
        uuid = nv.uuid(handle)  # so each GPU's history can be matched across runs (the gate's memory)
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
            persistence=_map(self._get("persistence mode", nv.persistence_mode(handle)), bool),
            power=self._power(handle),
            idle_clocks=self._idle(handle),
            partition=self._mig(handle),
            fabric=self._fabric(handle),
            extra={} if isinstance(uuid, NvmlFailure) else {"uuid": uuid},
        )

    def _ecc(self, handle: Any, enabled: bool | Missing) -> dict[str, int] | Missing:
        if enabled is False:
            return Missing("ECC is switched off, so the driver counts no memory errors")
        counts: dict[str, int] = {}
        reasons = []
        for counter, counter_name in ((VOLATILE, "volatile"), (AGGREGATE, "aggregate")):
            for kind, kind_name in ((CORRECTED, "corrected"), (UNCORRECTED, "uncorrected")):
                what = f"{counter_name} {kind_name} ECC errors"
                value = self._get(what, self.nvml.total_ecc_errors(handle, kind, counter))
                if isinstance(value, Missing):
                    reasons.append(value.why)
                else:
                    counts[f"{counter_name}_{kind_name}"] = int(value)
        return counts or Missing(reasons[0])

    def _retired(self, handle: Any) -> dict[str, int] | Missing:
        nv = self.nvml
        sbe = self._get("retired pages", nv.retired_page_count(handle, MULTIPLE_SBE))
        if isinstance(sbe, Missing):
            return sbe
        dbe = self._get("retired pages", nv.retired_page_count(handle, DOUBLE_BIT))
        pending = self._get("pending page retirement", nv.retired_pages_pending(handle))
        return {
            "retired_sbe": int(sbe),
            "retired_dbe": 0 if isinstance(dbe, Missing) else int(dbe),
            "pending": 0 if isinstance(pending, Missing) else int(bool(pending)),
        }

    def _remap(self, handle: Any) -> dict[str, int] | Missing:
        rows = self._get("row remapping", self.nvml.remapped_rows(handle))
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
        if isinstance(handle, NvmlFailure):
            return Missing(f"the driver cannot reach this GPU: {handle}")
        values = {}
        for key, call in (
            ("gen", nv.pcie_generation),
            ("max_gen", nv.pcie_max_generation),
            ("width", nv.pcie_width),
            ("max_width", nv.pcie_max_width),
        ):
            value = self._get("the PCIe link state", call(handle))
            if isinstance(value, Missing):
                return value
            values[key] = int(value)
        gpu_max = self._get("the GPU's own PCIe generation", nv.pcie_gpu_max_generation(handle))
        if not isinstance(gpu_max, Missing):
            values["gpu_max_gen"] = int(gpu_max)
        return values

    def _power(self, handle: Any) -> dict[str, float] | Missing:
        nv = self.nvml
        limit = self._get("the power limit", nv.power_limit(handle))
        if isinstance(limit, Missing):
            return limit
        out = {"limit_w": limit / 1000}
        default = self._get("the default power limit", nv.default_power_limit(handle))
        bounds = self._get("the power limit range", nv.power_limit_range(handle))
        enforced = self._get("the enforced power limit", nv.enforced_power_limit(handle))
        if not isinstance(default, Missing):
            out["default_w"] = default / 1000
        if not isinstance(bounds, Missing):
            out["min_w"], out["max_w"] = bounds[0] / 1000, bounds[1] / 1000
        if not isinstance(enforced, Missing):
            out["enforced_w"] = enforced / 1000
        return out

    def _idle(self, handle: Any) -> dict[str, Any] | Missing:
        nv = self.nvml
        mask = self._get("clock event reasons", nv.clock_event_reasons(handle))
        if isinstance(mask, Missing):
            return mask
        util = self._get("utilization", nv.utilization(handle))
        return {
            "reasons": list(decode_reasons(int(mask))),
            "mask": int(mask),
            "utilization_pct": None if isinstance(util, Missing) else int(util.gpu),
        }

    def _mig(self, handle: Any) -> dict[str, Any] | Missing:
        mode = self._get("MIG mode", self.nvml.mig_mode(handle))
        if isinstance(mode, Missing):
            return Missing(mode.why.replace("does not offer MIG mode", "has no MIG"))
        return {
            "kind": "MIG",
            "current": "enabled" if mode[0] else "disabled",
            "pending": "enabled" if mode[1] else "disabled",
        }

    def _fabric(self, handle: Any) -> dict[str, Any] | Missing:
        info = self._get("NVSwitch fabric state", self.nvml.fabric(handle))
        if isinstance(info, Missing):
            return info
        if info.state == 0:
            return Missing("this GPU is not attached to an NVSwitch fabric (NVML: not supported)")
        return {"state": FABRIC_STATES.get(info.state, str(info.state)), "status": int(info.status)}

    def close(self) -> None:
        self.nvml.close()


def _map(value: Any, kind: Callable[[Any], Any]) -> Any:
    return value if isinstance(value, Missing) else kind(value)


def _xid_for(bus: str | None, xids: dict[str, Counter[int]] | Missing) -> dict[str, Any] | Missing:
    if isinstance(xids, Missing):
        return xids
    if bus is None:
        return Missing("the GPU's PCI address is unknown, so kernel-log XIDs cannot be matched to it")
    return {"codes": dict(sorted(xids.get(bus, Counter()).items()))}
