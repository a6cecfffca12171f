"""The environment fingerprint: a short digest of what decides whether two results are comparable."""

from __future__ import annotations

import contextlib
import hashlib
import json
import platform
import socket
import sys
from typing import Any

from rigcheck.engine.facts.host import cpu_facts, result_changing_env
from rigcheck.engine.facts.torch_build import loaded_blas


def blas_identity(libraries: list[dict[str, Any]]) -> list[list[Any]]:
    """Each BLAS/OpenMP library once, in a fixed order: threadpoolctl lists them in no fixed order."""
    rows = {(str(b.get("internal_api")), str(b.get("version")), str(b.get("architecture"))) for b in libraries}
    return [list(row) for row in sorted(rows)]


def fingerprint_basis(torch: Any, driver_version: str | None) -> dict[str, Any]:
    """Stable facts only: versions, devices and settings, never free memory, clocks, PIDs or load order."""
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
        "torch": str(torch.__version__),
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "dnn": cudnn,
        "driver": driver_version,
        "numpy": numpy.__version__,
        "blas": blas_identity(loaded_blas()),
        "devices": devices,
        "env": result_changing_env(),
    }


def digest(basis: dict[str, Any]) -> str:
    text = json.dumps(basis, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]
