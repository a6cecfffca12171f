"""NVML's health calls (ECC, retired pages and rows, PCIe, persistence, power limits, MIG, fabric, NVLink).

A mixin of engine/hw/nvml.py's `Nvml`, split out to keep that module small: the methods here use its
`_call`, `_value`, `_pair` and `_struct` helpers and answer a value or an `NvmlFailure` like every other call.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from rigcheck.engine.hw.nvml_types import (
    INSUFFICIENT_SIZE,
    FabricInfo,
    NvmlFailure,
    PciInfo,
    _Fabric,
    _int,
    _Pci,
    _pci,
    _uint,
    _ull,
)

Handle = ctypes.c_void_p


class NvmlHealthCalls:
    """The health calls; `Nvml` supplies the helpers declared here."""

    _call: Callable[..., NvmlFailure | None]
    _value: Callable[..., Any]
    _pair: Callable[..., tuple[int, int] | NvmlFailure]
    _struct: Callable[..., NvmlFailure | None]

    def ecc_mode(self, handle: Handle) -> tuple[int, int] | NvmlFailure:
        """(current, pending)."""
        return self._pair("nvmlDeviceGetEccMode", handle, _int)

    def total_ecc_errors(self, handle: Handle, error_type: int, counter_type: int) -> int | NvmlFailure:
        return self._value("nvmlDeviceGetTotalEccErrors", _ull, handle, _int(error_type), _int(counter_type))

    def retired_page_count(self, handle: Handle, cause: int) -> int | NvmlFailure:
        """How many pages are retired for `cause`; asks only for the count, not the addresses."""
        count = _uint(0)
        failed = self._call("nvmlDeviceGetRetiredPages", handle, _int(cause), ctypes.byref(count), None)
        if failed is not None and failed.code != INSUFFICIENT_SIZE:
            return failed
        return int(count.value)

    def retired_pages_pending(self, handle: Handle) -> int | NvmlFailure:
        return self._value("nvmlDeviceGetRetiredPagesPendingStatus", _int, handle)

    def remapped_rows(self, handle: Handle) -> tuple[int, int, int, int] | NvmlFailure:
        """(correctable, uncorrectable, pending, failure)."""
        values = [_uint() for _ in range(4)]
        failed = self._call("nvmlDeviceGetRemappedRows", handle, *(ctypes.byref(v) for v in values))
        return failed or (values[0].value, values[1].value, values[2].value, values[3].value)

    def pcie_generation(self, handle: Handle) -> int | NvmlFailure:
        return self._value("nvmlDeviceGetCurrPcieLinkGeneration", _uint, handle)

    def pcie_max_generation(self, handle: Handle) -> int | NvmlFailure:
        """The most the link allows (the GPU and the slot together)."""
        return self._value("nvmlDeviceGetMaxPcieLinkGeneration", _uint, handle)

    def pcie_gpu_max_generation(self, handle: Handle) -> int | NvmlFailure:
        """The most the GPU itself supports."""
        return self._value("nvmlDeviceGetGpuMaxPcieLinkGeneration", _uint, handle)

    def pcie_width(self, handle: Handle) -> int | NvmlFailure:
        return self._value("nvmlDeviceGetCurrPcieLinkWidth", _uint, handle)

    def pcie_max_width(self, handle: Handle) -> int | NvmlFailure:
        return self._value("nvmlDeviceGetMaxPcieLinkWidth", _uint, handle)

    def persistence_mode(self, handle: Handle) -> int | NvmlFailure:
        return self._value("nvmlDeviceGetPersistenceMode", _uint, handle)

    def power_limit(self, handle: Handle) -> int | NvmlFailure:
        """mW, as set."""
        return self._value("nvmlDeviceGetPowerManagementLimit", _uint, handle)

    def default_power_limit(self, handle: Handle) -> int | NvmlFailure:
        return self._value("nvmlDeviceGetPowerManagementDefaultLimit", _uint, handle)

    def power_limit_range(self, handle: Handle) -> tuple[int, int] | NvmlFailure:
        """(min, max) mW."""
        return self._pair("nvmlDeviceGetPowerManagementLimitConstraints", handle)

    def enforced_power_limit(self, handle: Handle) -> int | NvmlFailure:
        """mW: the lowest of every limit in force."""
        return self._value("nvmlDeviceGetEnforcedPowerLimit", _uint, handle)

    def mig_mode(self, handle: Handle) -> tuple[int, int] | NvmlFailure:
        """(current, pending)."""
        return self._pair("nvmlDeviceGetMigMode", handle)

    def fabric(self, handle: Handle) -> FabricInfo | NvmlFailure:
        info = _Fabric()
        return self._struct("nvmlDeviceGetGpuFabricInfo", info, handle) or FabricInfo(int(info.state), info.status)

    # --- topology ----------------------------------------------------------------------------------

    def common_ancestor(self, first: Handle, second: Handle) -> int | NvmlFailure:
        """NVML's topology level: 0 same board, 10 one switch, 20 several, 30 host bridge, 40 node, 50 system."""
        return self._value("nvmlDeviceGetTopologyCommonAncestor", _int, first, second)

    def nvlink_active(self, handle: Handle, link: int) -> int | NvmlFailure:
        return self._value("nvmlDeviceGetNvLinkState", _int, handle, _uint(link))

    def nvlink_remote_pci(self, handle: Handle, link: int) -> PciInfo | NvmlFailure:
        info = _Pci()
        return self._struct("nvmlDeviceGetNvLinkRemotePciInfo_v2", info, handle, _uint(link)) or _pci(info)

    def nvlink_remote_type(self, handle: Handle, link: int) -> int | NvmlFailure:
        """0 a GPU, 1 an IBMNPU, 2 an NVSwitch."""
        return self._value("nvmlDeviceGetNvLinkRemoteDeviceType", _int, handle, _uint(link))
