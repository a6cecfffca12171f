"""The environment fingerprint: a short digest of what decides whether two results are comparable."""

from __future__ import annotations

import contextlib
import hashlib
import json
import platform
import socket
import sys
from typing import Any

from .host import cpu_facts, result_changing_env
from .torch_build import loaded_blas


def fingerprint_basis(torch: Any, driver_version: str | None) -> dict[str, Any]:
    """Stable facts only: versions, devices and settings, never free memory, clocks or PIDs."""
    import numpy

    devices = []
    if torch.cuda.is_available():
        for index in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(index)
            arch = getattr(props, "gcnArchName", None) or f"sm_{props.major}{props.minor}"
            devices.append([props.name, arch, props.total_memory])
    cudnn = None
    with contextlib.suppress(Exception):
        cudnn = torch.backends.cudnn.version()
    return {
        "host": socket.gethostname(),
        "cpu": cpu_facts()["model"],
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "executable": sys.executable,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "dnn": cudnn,
        "driver": driver_version,
        "numpy": numpy.__version__,
        "blas": [[b.get("internal_api"), b.get("version"), b.get("architecture")] for b in loaded_blas()],
        "devices": devices,
        "env": result_changing_env(),
    }


def digest(basis: dict[str, Any]) -> str:
    text = json.dumps(basis, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]
