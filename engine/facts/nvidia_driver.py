"""What the NVIDIA driver itself reports (version, per-GPU memory), through NVML by ctypes.

ctypes keeps the stage child free of nvidia-ml-py, so Probe works in any environment with torch.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any


class _Memory(ctypes.Structure):
    _fields_ = [
        ("total", ctypes.c_ulonglong),
        ("free", ctypes.c_ulonglong),
        ("used", ctypes.c_ulonglong),
    ]


def _text(call: Any, *args: Any) -> str | None:
    buffer = ctypes.create_string_buffer(96)
    return buffer.value.decode() if call(*args, buffer, 96) == 0 else None


def nvidia_driver(library: str = "libnvidia-ml.so.1") -> dict[str, Any]:
    """Driver version, CUDA driver API version and every GPU's name, UUID and memory, or a reason."""
    try:
        nvml = ctypes.CDLL(library)
    except OSError as error:
        return {"available": False, "reason": f"NVML not loadable: {error}"}
    if nvml.nvmlInit_v2() != 0:
        return {"available": False, "reason": "nvmlInit failed"}
    try:
        facts: dict[str, Any] = {"available": True}
        facts["driver_version"] = _text(nvml.nvmlSystemGetDriverVersion)
        cuda = ctypes.c_int()
        if nvml.nvmlSystemGetCudaDriverVersion_v2(ctypes.byref(cuda)) == 0:
            facts["cuda_driver_api"] = f"{cuda.value // 1000}.{cuda.value % 1000 // 10}"
        count = ctypes.c_uint()
        nvml.nvmlDeviceGetCount_v2(ctypes.byref(count))
        devices = []
        for index in range(count.value):
            handle = ctypes.c_void_p()
            if nvml.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle)) != 0:
                continue
            memory = _Memory()
            ok = nvml.nvmlDeviceGetMemoryInfo(handle, ctypes.byref(memory)) == 0
            devices.append(
                {
                    "index": index,
                    "name": _text(nvml.nvmlDeviceGetName, handle),
                    "uuid": _text(nvml.nvmlDeviceGetUUID, handle),
                    "memory_total": memory.total if ok else None,
                    "memory_used": memory.used if ok else None,
                }
            )
        facts["devices"] = devices
        return facts
    finally:
        nvml.nvmlShutdown()


def proc_driver_version(path: Path = Path("/proc/driver/nvidia/version")) -> str | None:
    try:
        first = path.read_text().splitlines()[0]
    except (OSError, IndexError):
        return None
    parts = first.split()
    return next((p for p in parts if p[:1].isdigit() and "." in p), None)
