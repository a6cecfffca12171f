"""NVML's answers as rigcheck reads them (small dataclasses), the ctypes structures NVML fills, and its codes.

Split from engine/hw/nvml.py, which makes the calls; every name here is importable from there too.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import TypeVar

SUCCESS, NOT_SUPPORTED, NO_PERMISSION, INSUFFICIENT_SIZE, FUNCTION_NOT_FOUND = 0, 3, 4, 7, 13
CLOCK_SM, CLOCK_MEM, TEMPERATURE_GPU = 1, 2, 0
SAMPLES_GPU_UTILIZATION = 1  # nvmlSamplingType_t NVML_GPU_UTILIZATION_SAMPLES
VALUE_NOT_AVAILABLE = 2**64 - 1  # an unsigned long long NVML could not fill (e.g. a process's memory under MIG)
MEMORY_V2 = 0x02000028  # nvmlMemory_v2: sizeof(nvmlMemory_v2_t) | 2 << 24
NAME_BUFFER = 96

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

T = TypeVar("T")
_uint, _ull, _int = ctypes.c_uint, ctypes.c_ulonglong, ctypes.c_int


def decode_reasons(mask: int | None) -> tuple[str, ...]:
    if not mask:
        return ()
    return tuple(word for bit, word in CLOCK_EVENT_REASONS.items() if mask & bit)


@dataclass(frozen=True)
class NvmlFailure:
    """A call that did not answer: NVML's return code and its message (FUNCTION_NOT_FOUND: this driver lacks it)."""

    code: int
    text: str

    def __str__(self) -> str:
        return self.text


@dataclass(frozen=True)
class NvmlUnavailable:
    """Why NVML cannot be used: `loaded` says the library is there but failed to start."""

    text: str
    loaded: bool


def ok(answer: T | NvmlFailure) -> T | None:
    """The value, or None where the call failed: for readers to whom a missing sensor is only a gap."""
    return None if isinstance(answer, NvmlFailure) else answer


@dataclass(frozen=True)
class PciInfo:
    bus_id: str  # as NVML writes it, "00000000:18:00.0"
    domain: int
    bus: int
    device: int


@dataclass(frozen=True)
class Memory:
    total: int
    free: int
    used: int


@dataclass(frozen=True)
class Utilization:
    gpu: int
    memory: int


@dataclass(frozen=True)
class GpuProcess:
    pid: int
    used_gpu_memory: int | None  # bytes; None where the driver cannot say


@dataclass(frozen=True)
class ProcessSample:
    pid: int
    time_stamp: int  # microseconds
    sm_util: int  # %


@dataclass(frozen=True)
class FabricInfo:
    state: int
    status: int


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


class _Memory(ctypes.Structure):
    _fields_ = [("total", _ull), ("free", _ull), ("used", _ull)]


class _MemoryV2(ctypes.Structure):
    _fields_ = [("version", _uint), ("total", _ull), ("reserved", _ull), ("free", _ull), ("used", _ull)]


class _Utilization(ctypes.Structure):
    _fields_ = [("gpu", _uint), ("memory", _uint)]


class _ProcessInfo(ctypes.Structure):
    _fields_ = [("pid", _uint), ("usedGpuMemory", _ull), ("gpuInstanceId", _uint), ("computeInstanceId", _uint)]


class _ProcessSample(ctypes.Structure):
    _fields_ = [
        ("pid", _uint),
        ("timeStamp", _ull),
        ("smUtil", _uint),
        ("memUtil", _uint),
        ("encUtil", _uint),
        ("decUtil", _uint),
    ]


class _Value(ctypes.Union):
    _fields_ = [
        ("d", ctypes.c_double),
        ("ui", _uint),
        ("ul", ctypes.c_ulong),
        ("ull", _ull),
        ("sll", ctypes.c_longlong),
    ]


class _Sample(ctypes.Structure):
    _fields_ = [("timeStamp", _ull), ("value", _Value)]


class _Fabric(ctypes.Structure):
    _fields_ = [("clusterUuid", ctypes.c_uint8 * 16), ("status", _int), ("cliqueId", _uint), ("state", _uint)]


def _pci(info: _Pci) -> PciInfo:
    return PciInfo(info.busId.decode(errors="replace"), info.domain, info.bus, info.device)
