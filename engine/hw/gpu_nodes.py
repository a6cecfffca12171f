"""Whether this host can have a GPU at all, from the kernel's own traces, without importing torch.

Asking an interpreter's torch how many GPUs it sees costs an `import torch` (4-7 s on a busy 2-core host). On
Linux a GPU that any torch could use leaves traces first: NVIDIA's driver module and /proc/driver/nvidia (the
device nodes themselves may be made only on first use, by nvidia-modprobe), ROCm's /dev/kfd and the amdgpu
module, WSL's /dev/dxg. Where none is there, no torch can see a GPU, and a run can be told so at once.
"""

from __future__ import annotations

import glob
import os
import sys

TRACES = ("/proc/driver/nvidia", "/sys/module/nvidia", "/dev/nvidiactl", "/dev/kfd", "/sys/module/amdgpu", "/dev/dxg")


def gpu_traces(root: str = "/", platform: str = sys.platform) -> list[str] | None:
    """The traces of a GPU driver found under `root`; None where this cannot be told (not Linux)."""
    if not platform.startswith("linux"):
        return None
    found = [path for path in TRACES if os.path.exists(os.path.join(root, path.lstrip("/")))]
    return found + sorted(glob.glob(os.path.join(root, "dev", "nvidia[0-9]*")))


def surely_no_gpu(root: str = "/", platform: str = sys.platform) -> bool:
    """True only where this host can have no GPU a torch could use: Linux with no GPU driver's trace."""
    return gpu_traces(root, platform) == []


NO_DRIVER_WORDS = "no GPU driver is loaded (no /proc/driver/nvidia, /dev/kfd or /dev/dxg)"
