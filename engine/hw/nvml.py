"""The one module that loads the NVIDIA management library (NVML): every NVML call rigcheck makes, by ctypes.

Why ctypes over libnvidia-ml.so.1 rather than nvidia-ml-py (pynvml): stage children may run under a
`--python` interpreter that has torch but not pynvml, and the parent and the children must read the
same calls the same way. Nothing here raises to its callers: `open_nvml` answers an `Nvml` or an
`NvmlUnavailable` saying why (no library = unavailable), and each call answers its value or an
`NvmlFailure` carrying NVML's return code and message, so a caller can say why a counter is missing.
Values keep NVML's own units (MHz, degrees C, mW, bytes, %), as nvidia-ml-py returns them.
"""

from __future__ import annotations

import ctypes
import threading
from typing import Any, TypeVar

from rigcheck.engine.hw.nvml_health import Handle, NvmlHealthCalls
from rigcheck.engine.hw.nvml_types import (  # noqa: F401  (the answers' names, importable from here)
    CLOCK_EVENT_REASONS,
    CLOCK_MEM,
    CLOCK_SM,
    FUNCTION_NOT_FOUND,
    INSUFFICIENT_SIZE,
    MEMORY_V2,
    NAME_BUFFER,
    NO_PERMISSION,
    NOT_SUPPORTED,
    SAMPLES_GPU_UTILIZATION,
    SUCCESS,
    TEMPERATURE_GPU,
    VALUE_NOT_AVAILABLE,
    FabricInfo,
    GpuProcess,
    Memory,
    NvmlFailure,
    NvmlUnavailable,
    PciInfo,
    ProcessSample,
    Utilization,
    _Fabric,
    _int,
    _Memory,
    _MemoryV2,
    _Pci,
    _pci,
    _ProcessInfo,
    _ProcessSample,
    _Sample,
    _uint,
    _ull,
    _Utilization,
    _Value,
    decode_reasons,
    ok,
)

LIBRARY = "libnvidia-ml.so.1"  # looked up at each open, so tests can point it at a stand-in
T = TypeVar("T")


def open_nvml(library: str | None = None) -> Nvml | NvmlUnavailable:
    """Load and start NVML (`library` defaults to LIBRARY); each open is matched by one `close`."""
    try:
        lib = ctypes.CDLL(library or LIBRARY)
    except OSError as error:
        return NvmlUnavailable(str(error), loaded=False)
    start = getattr(lib, "nvmlInit_v2", None)
    if start is None:
        return NvmlUnavailable("this library has no nvmlInit_v2", loaded=False)
    nvml = Nvml(lib)
    code = start()
    if code != SUCCESS:
        return NvmlUnavailable(nvml.error_text(code), loaded=True)
    return nvml


class Nvml(NvmlHealthCalls):
    """A started NVML. Device calls take a handle from `handle(index)`; each answers a value or NvmlFailure."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self._closed = False
        self._lock = threading.Lock()
        describe = getattr(lib, "nvmlErrorString", None)
        if describe is not None:
            describe.restype = ctypes.c_char_p
        self._describe = describe

    def error_text(self, code: int) -> str:
        if self._describe is None:
            return f"NVML error {code}"
        text = self._describe(code)
        return text.decode(errors="replace") if text else f"NVML error {code}"

    def _call(self, name: str, *args: Any) -> NvmlFailure | None:
        function = getattr(self.lib, name, None)
        if function is None:
            return NvmlFailure(FUNCTION_NOT_FOUND, f"{name} is not in this driver's NVML")
        try:
            code = function(*args)
        except Exception as error:  # a ctypes argument error: a bug to report, never a crash of the reader
            return NvmlFailure(-1, f"{name}: {error}")
        return None if code == SUCCESS else NvmlFailure(code, self.error_text(code))

    def _value(self, name: str, kind: type, *args: Any) -> Any:
        out = kind()
        failed = self._call(name, *args, ctypes.byref(out))
        return failed or out.value

    def _struct(self, name: str, out: ctypes.Structure, *args: Any) -> NvmlFailure | None:
        return self._call(name, *args, ctypes.byref(out))

    def _pair(self, name: str, handle: Handle, kind: type = _uint) -> tuple[int, int] | NvmlFailure:
        first, second = kind(), kind()
        failed = self._call(name, handle, ctypes.byref(first), ctypes.byref(second))
        return failed or (int(first.value), int(second.value))

    def _text(self, name: str, *args: Any) -> str | NvmlFailure:
        buffer = ctypes.create_string_buffer(NAME_BUFFER)
        failed = self._call(name, *args, buffer, _uint(NAME_BUFFER))
        return failed or buffer.value.decode(errors="replace")

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._call("nvmlShutdown")

    # --- the system --------------------------------------------------------------------------------

    def driver_version(self) -> str | NvmlFailure:
        return self._text("nvmlSystemGetDriverVersion")

    def cuda_driver_version(self) -> int | NvmlFailure:
        """The CUDA driver API version as NVML encodes it: 12040 is 12.4."""
        return self._value("nvmlSystemGetCudaDriverVersion_v2", _int)

    def count(self) -> int | NvmlFailure:
        return self._value("nvmlDeviceGetCount_v2", _uint)

    def handle(self, index: int) -> Handle | NvmlFailure:
        handle = Handle()
        failed = self._call("nvmlDeviceGetHandleByIndex_v2", _uint(index), ctypes.byref(handle))
        return failed or handle

    def handle_by_bus_id(self, address: str) -> Handle | NvmlFailure:
        """The GPU at this PCI address ("0000:1b:00.0"), straight from the driver (no CUDA context)."""
        handle = Handle()
        failed = self._call("nvmlDeviceGetHandleByPciBusId_v2", address.encode("ascii"), ctypes.byref(handle))
        return failed or handle

    # --- identity ----------------------------------------------------------------------------------

    def name(self, handle: Handle) -> str | NvmlFailure:
        return self._text("nvmlDeviceGetName", handle)

    def uuid(self, handle: Handle) -> str | NvmlFailure:
        return self._text("nvmlDeviceGetUUID", handle)

    def vbios_version(self, handle: Handle) -> str | NvmlFailure:
        return self._text("nvmlDeviceGetVbiosVersion", handle)

    def pci_info(self, handle: Handle) -> PciInfo | NvmlFailure:
        info = _Pci()
        return self._struct("nvmlDeviceGetPciInfo_v3", info, handle) or _pci(info)

    # --- readings ----------------------------------------------------------------------------------

    def clock(self, handle: Handle, kind: int) -> int | NvmlFailure:
        """MHz now; kind CLOCK_SM or CLOCK_MEM."""
        return self._value("nvmlDeviceGetClockInfo", _uint, handle, _int(kind))

    def max_clock(self, handle: Handle, kind: int) -> int | NvmlFailure:
        return self._value("nvmlDeviceGetMaxClockInfo", _uint, handle, _int(kind))

    def cuda_capability(self, handle: Handle) -> tuple[int, int] | NvmlFailure:
        """(major, minor): the architecture whose per-SM rates derive its peaks."""
        return self._pair("nvmlDeviceGetCudaComputeCapability", handle, _int)

    def gpu_cores(self, handle: Handle) -> int | NvmlFailure:
        """FP32 lanes in all: with the architecture's lanes per SM, its SM count."""
        return self._value("nvmlDeviceGetNumGpuCores", _uint, handle)

    def memory_bus_width(self, handle: Handle) -> int | NvmlFailure:
        """Bits: with the maximum memory clock, the theoretical memory bandwidth (measure/arch_peaks.py)."""
        return self._value("nvmlDeviceGetMemoryBusWidth", _uint, handle)

    def temperature(self, handle: Handle, sensor: int = TEMPERATURE_GPU) -> int | NvmlFailure:
        return self._value("nvmlDeviceGetTemperature", _uint, handle, _int(sensor))

    def power_usage(self, handle: Handle) -> int | NvmlFailure:
        """mW."""
        return self._value("nvmlDeviceGetPowerUsage", _uint, handle)

    def utilization(self, handle: Handle) -> Utilization | NvmlFailure:
        value = _Utilization()
        return self._struct("nvmlDeviceGetUtilizationRates", value, handle) or Utilization(value.gpu, value.memory)

    def memory(self, handle: Handle) -> Memory | NvmlFailure:
        """Memory info v1: its `used` counts the driver's reservation."""
        value = _Memory()
        return self._struct("nvmlDeviceGetMemoryInfo", value, handle) or Memory(value.total, value.free, value.used)

    def memory_v2(self, handle: Handle) -> Memory | NvmlFailure:
        """Memory info v2: its `used` leaves out the driver's reservation, as nvidia-smi does."""
        value = _MemoryV2(version=MEMORY_V2)
        failed = self._struct("nvmlDeviceGetMemoryInfo_v2", value, handle)
        return failed or Memory(value.total, value.free, value.used)

    def clock_event_reasons(self, handle: Handle) -> int | NvmlFailure:
        """The bit mask of CLOCK_EVENT_REASONS, through the older call's name on drivers before 535."""
        found = self._value("nvmlDeviceGetCurrentClocksEventReasons", _ull, handle)
        if isinstance(found, NvmlFailure) and found.code == FUNCTION_NOT_FOUND:
            return self._value("nvmlDeviceGetCurrentClocksThrottleReasons", _ull, handle)
        return found

    def compute_processes(self, handle: Handle) -> list[GpuProcess] | NvmlFailure:
        """The compute processes on this GPU (asked for their number first, then read with room to spare)."""
        return self._processes("nvmlDeviceGetComputeRunningProcesses_v3", handle)

    def graphics_processes(self, handle: Handle) -> list[GpuProcess] | NvmlFailure:
        """The graphics processes on this GPU: a display server or a renderer holds memory and works too."""
        return self._processes("nvmlDeviceGetGraphicsRunningProcesses_v3", handle)

    def _processes(self, name: str, handle: Handle) -> list[GpuProcess] | NvmlFailure:
        count = _uint(0)
        failed = self._call(name, handle, ctypes.byref(count), None)
        if failed is None:
            return []
        if failed.code != INSUFFICIENT_SIZE:
            return failed
        count.value = count.value * 2 + 5  # processes may start between the two calls
        found = (_ProcessInfo * count.value)()
        failed = self._call(name, handle, ctypes.byref(count), found)
        if failed is not None:
            return failed
        return [
            GpuProcess(int(p.pid), None if p.usedGpuMemory == VALUE_NOT_AVAILABLE else int(p.usedGpuMemory))
            for p in found[: count.value]
        ]

    def process_utilization(self, handle: Handle, since_us: int) -> list[ProcessSample] | NvmlFailure:
        """Per-process SM use sampled after `since_us`; NVML answers NOT_FOUND when it holds no such sample."""
        count, since = _uint(0), _ull(since_us)
        failed = self._call("nvmlDeviceGetProcessUtilization", handle, None, ctypes.byref(count), since)
        if failed is None:
            return []
        if failed.code != INSUFFICIENT_SIZE:
            return failed
        found = (_ProcessSample * count.value)()
        failed = self._call("nvmlDeviceGetProcessUtilization", handle, found, ctypes.byref(count), since)
        if failed is not None:
            return failed
        return [ProcessSample(int(s.pid), int(s.timeStamp), int(s.smUtil)) for s in found[: count.value]]

    def samples(self, handle: Handle, kind: int, since_us: int) -> list[tuple[int, float]] | NvmlFailure:
        """The driver's own samples of `kind` (SAMPLES_GPU_UTILIZATION: % over each sampling period) taken
        after `since_us` (epoch microseconds), as (time stamp, value); NOT_FOUND where it holds none that new."""
        kind_of, count, since = _uint(0), _uint(0), _ull(since_us)
        failed = self._call(
            "nvmlDeviceGetSamples", handle, _int(kind), since, ctypes.byref(kind_of), ctypes.byref(count), None
        )
        if failed is not None:
            return failed
        found = (_Sample * max(1, count.value))()
        failed = self._call(
            "nvmlDeviceGetSamples", handle, _int(kind), since, ctypes.byref(kind_of), ctypes.byref(count), found
        )
        if failed is not None:
            return failed
        field = ("d", "ui", "ul", "ull", "sll", "ui")[kind_of.value] if kind_of.value < 6 else "ui"
        return [(int(s.timeStamp), float(getattr(s.value, field))) for s in found[: count.value]]
