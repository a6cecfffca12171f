"""A small NVML binding by ctypes with pynvml's call shapes, so stage children need no nvidia-ml-py.

Only the calls rigcheck reads are bound. Each raises NvmlError (with NVML's own message) on a
non-zero return, and a call this driver lacks raises NvmlError(FUNCTION_NOT_FOUND), as pynvml does.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

NOT_SUPPORTED, NO_PERMISSION, INSUFFICIENT_SIZE, FUNCTION_NOT_FOUND = 3, 4, 7, 13
_uint, _ull, _int = ctypes.c_uint, ctypes.c_ulonglong, ctypes.c_int


class NvmlError(Exception):
    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.value = code


class _Pci(ctypes.Structure):
    _fields_ = [
        ("busIdLegacy", ctypes.c_char * 16),
        ("domain", _uint),
        ("bus", _uint),
        ("device", _uint),
        ("pciDeviceId", _uint),
        ("pciSubSystemId", _uint),
        ("busId", ctypes.c_char * 32),
    ]


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", _uint), ("memory", _uint)]


class _Fabric(ctypes.Structure):
    _fields_ = [("clusterUuid", ctypes.c_uint8 * 16), ("status", _int), ("cliqueId", _uint), ("state", _uint)]


class _Memory(ctypes.Structure):
    _fields_ = [("total", _ull), ("free", _ull), ("used", _ull)]


class CtypesNvml:
    """pynvml-shaped calls over libnvidia-ml; raises OSError when the library cannot be loaded."""

    def __init__(self, library: str = "libnvidia-ml.so.1") -> None:
        self.lib = ctypes.CDLL(library)
        self.lib.nvmlErrorString.restype = ctypes.c_char_p

    def _call(self, name: str, *args: Any) -> None:
        function = getattr(self.lib, name, None)
        if function is None:
            raise NvmlError(FUNCTION_NOT_FOUND, f"{name} is not in this driver's NVML")
        code = function(*args)
        if code != 0:
            raise NvmlError(code, self.lib.nvmlErrorString(code).decode(errors="replace"))

    def _out(self, name: str, kind: type, *args: Any) -> Any:
        value = kind()
        self._call(name, *args, ctypes.byref(value))
        return value.value

    def _pair(self, name: str, handle: Any, kind: type = _uint) -> list[Any]:
        first, second = kind(), kind()
        self._call(name, handle, ctypes.byref(first), ctypes.byref(second))
        return [first.value, second.value]

    def nvmlInit(self) -> None:
        self._call("nvmlInit_v2")

    def nvmlShutdown(self) -> None:
        self._call("nvmlShutdown")

    def nvmlDeviceGetCount(self) -> int:
        return int(self._out("nvmlDeviceGetCount_v2", _uint))

    def nvmlDeviceGetHandleByIndex(self, index: int) -> ctypes.c_void_p:
        handle = ctypes.c_void_p()
        self._call("nvmlDeviceGetHandleByIndex_v2", _uint(index), ctypes.byref(handle))
        return handle

    def nvmlDeviceGetName(self, handle: Any) -> str:
        buffer = ctypes.create_string_buffer(96)
        self._call("nvmlDeviceGetName", handle, buffer, _uint(96))
        return buffer.value.decode(errors="replace")

    def nvmlDeviceGetPciInfo(self, handle: Any) -> SimpleNamespace:
        info = _Pci()
        self._call("nvmlDeviceGetPciInfo_v3", handle, ctypes.byref(info))
        return SimpleNamespace(busId=info.busId.decode(), domain=info.domain, bus=info.bus, device=info.device)

    def nvmlDeviceGetEccMode(self, handle: Any) -> list[int]:
        return self._pair("nvmlDeviceGetEccMode", handle, _int)

    def nvmlDeviceGetTotalEccErrors(self, handle: Any, error_type: int, counter_type: int) -> int:
        return int(self._out("nvmlDeviceGetTotalEccErrors", _ull, handle, _int(error_type), _int(counter_type)))

    def nvmlDeviceGetRetiredPages(self, handle: Any, cause: int) -> list[int]:
        count = _uint(0)
        function = getattr(self.lib, "nvmlDeviceGetRetiredPages", None)
        if function is None:
            raise NvmlError(FUNCTION_NOT_FOUND, "nvmlDeviceGetRetiredPages is not in this driver's NVML")
        code = function(handle, _int(cause), ctypes.byref(count), None)  # asks only for the count
        if code not in (0, INSUFFICIENT_SIZE):
            raise NvmlError(code, self.lib.nvmlErrorString(code).decode(errors="replace"))
        return [0] * count.value  # the addresses themselves are not needed

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: Any) -> int:
        return int(self._out("nvmlDeviceGetRetiredPagesPendingStatus", _int, handle))

    def nvmlDeviceGetRemappedRows(self, handle: Any) -> tuple[int, int, int, int]:
        values = [_uint() for _ in range(4)]
        self._call("nvmlDeviceGetRemappedRows", handle, *(ctypes.byref(v) for v in values))
        return tuple(v.value for v in values)  # type: ignore[return-value]

    def _uint_call(self, name: str) -> Callable[[Any], int]:
        return lambda handle: int(self._out(name, _uint, handle))

    def __getattr__(self, name: str) -> Callable[[Any], int]:
        if name in _UINT_GETTERS:
            return self._uint_call(name)
        raise AttributeError(name)

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: Any) -> list[int]:
        return self._pair("nvmlDeviceGetPowerManagementLimitConstraints", handle)

    def nvmlDeviceGetMigMode(self, handle: Any) -> list[int]:
        return self._pair("nvmlDeviceGetMigMode", handle)

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: Any) -> int:
        try:
            return int(self._out("nvmlDeviceGetCurrentClocksEventReasons", _ull, handle))
        except NvmlError as error:
            if error.value != FUNCTION_NOT_FOUND:
                raise
            return int(self._out("nvmlDeviceGetCurrentClocksThrottleReasons", _ull, handle))

    def nvmlDeviceGetUtilizationRates(self, handle: Any) -> _Utilization:
        value = _Utilization()
        self._call("nvmlDeviceGetUtilizationRates", handle, ctypes.byref(value))
        return value

    def nvmlDeviceGetMemoryInfo(self, handle: Any) -> _Memory:
        value = _Memory()
        self._call("nvmlDeviceGetMemoryInfo", handle, ctypes.byref(value))
        return value

    def nvmlDeviceGetClockInfo(self, handle: Any, kind: int) -> int:
        return int(self._out("nvmlDeviceGetClockInfo", _uint, handle, _int(kind)))

    def nvmlDeviceGetMaxClockInfo(self, handle: Any, kind: int) -> int:
        return int(self._out("nvmlDeviceGetMaxClockInfo", _uint, handle, _int(kind)))

    def nvmlDeviceGetTemperature(self, handle: Any, sensor: int) -> int:
        return int(self._out("nvmlDeviceGetTemperature", _uint, handle, _int(sensor)))

    def nvmlDeviceGetComputeRunningProcesses(self, handle: Any) -> list[Any]:
        raise NvmlError(NOT_SUPPORTED, "process lists are read by the parent's telemetry, not here")

    def nvmlDeviceGetGpuFabricInfo(self, handle: Any) -> SimpleNamespace:
        info = _Fabric()
        self._call("nvmlDeviceGetGpuFabricInfo", handle, ctypes.byref(info))
        return SimpleNamespace(state=info.state, status=info.status)


_UINT_GETTERS = {
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetGpuMaxPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetPersistenceMode",
    "nvmlDeviceGetPowerManagementLimit",
    "nvmlDeviceGetPowerManagementDefaultLimit",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetPowerUsage",
}
