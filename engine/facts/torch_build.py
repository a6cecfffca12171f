"""Facts about the torch build and the BLAS libraries this process actually loaded."""

from __future__ import annotations

import contextlib
import re
from typing import Any


def build_facts(torch: Any) -> dict[str, Any]:
    """Version, CUDA/HIP and cuDNN/MIOpen versions, compiled architectures, CPU back ends."""
    hip = getattr(torch.version, "hip", None)
    cudnn_version = None
    with contextlib.suppress(Exception):
        cudnn_version = torch.backends.cudnn.version()
    config = torch.__config__.show()
    blas = dict(re.findall(r"\b(BLAS_INFO|LAPACK_INFO)=(\w+)", config))
    try:
        arch_list = torch.cuda.get_arch_list()
    except Exception:
        arch_list = []
    return {
        "torch": str(torch.__version__),
        "dnn_version_text": dnn_version_text(cudnn_version),
        "cuda": torch.version.cuda,
        "hip": hip,
        "build": "ROCm" if hip else ("CUDA" if torch.version.cuda else "CPU-only"),
        "dnn_library": "MIOpen" if hip else "cuDNN",
        "dnn_version": cudnn_version,
        "arch_list": arch_list,
        "mkl": torch.backends.mkl.is_available(),
        "mkldnn": torch.backends.mkldnn.is_available(),
        "openmp": torch.backends.openmp.is_available(),
        "blas_info": blas.get("BLAS_INFO"),
        "lapack_info": blas.get("LAPACK_INFO"),
        "num_threads": torch.get_num_threads(),
        "num_interop_threads": torch.get_num_interop_threads(),
        "parallel_info": torch.__config__.parallel_info().strip().splitlines(),
    }


def loaded_blas() -> list[dict[str, Any]]:
    """Every BLAS/OpenMP library threadpoolctl sees, with the kernel it dispatched (architecture).

    torch's MKL is linked statically and invisible here; build_facts covers it.
    """
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return [{"note": "threadpoolctl is not installed in this environment"}]
    keep = ("user_api", "internal_api", "version", "architecture", "num_threads", "filepath")
    return [{key: info.get(key) for key in keep} for info in threadpool_info()]


def dnn_version_text(version: int | None) -> str | None:
    """cuDNN 9 encodes 9.19.0 as 91900 (major*10000 + minor*100 + patch); cuDNN 8 as 8902 (x1000)."""
    if not version:
        return None
    if version >= 10000:
        return f"{version // 10000}.{version % 10000 // 100}.{version % 100}"
    return f"{version // 1000}.{version % 1000 // 100}.{version % 100}"
