"""Facts about the host CPU and the environment variables that change numerical results."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path
from typing import Any

from rigcheck.engine.hw.sysfs import read_text

RESULT_CHANGING_VARS = (
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "HSA_OVERRIDE_GFX_VERSION",
    "HSA_XNACK",
    "HSA_ENABLE_SDMA",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_NUM_THREADS",
    "OPENBLAS_L2_SIZE",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "MKL_CBWR",
    "MKL_DEBUG_CPU_TYPE",
    "KMP_AFFINITY",
    "GOMP_CPU_AFFINITY",
    "CUDA_VISIBLE_DEVICES",
    "HIP_VISIBLE_DEVICES",
    "ROCR_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "CUBLAS_WORKSPACE_CONFIG",
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
    "TORCH_BLAS_PREFER_HIPBLASLT",
    "PYTORCH_TUNABLEOP_ENABLED",
    "PYTORCH_CUDA_ALLOC_CONF",
    "PYTORCH_HIP_ALLOC_CONF",
)
RESULT_CHANGING_PREFIXES = ("MIOPEN_", "ROCBLAS_", "HIPBLASLT_", "DNNL_", "ONEDNN_")

# Set, these deserve a warning: they swap libraries, fake the GPU's identity or change the maths.
RISKY_VARS = {
    "LD_PRELOAD": "preloads libraries ahead of the ones torch was built with",
    "HSA_OVERRIDE_GFX_VERSION": "makes ROCm treat the GPU as another architecture",
    "NVIDIA_TF32_OVERRIDE": "overrides whether float32 matrix multiplies use TF32",
    "CUDA_LAUNCH_BLOCKING": "serialises every GPU launch, so throughput will be low",
    "MKL_DEBUG_CPU_TYPE": "forces MKL onto a code path chosen by hand",
}

CPU_FLAGS_OF_INTEREST = (
    "avx2",
    "fma",
    "avx512f",
    "avx512_bf16",
    "avx512_fp16",
    "avx512_vnni",
    "amx_bf16",
    "amx_fp16",
    "amx_tile",
)


def result_changing_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if environ is None else environ)
    return {
        key: value
        for key, value in sorted(env.items())
        if key in RESULT_CHANGING_VARS or key.startswith(RESULT_CHANGING_PREFIXES)
    }


def cpu_facts(cpuinfo: Path = Path("/proc/cpuinfo"), sysfs: Path = Path("/sys/devices/system/cpu")) -> dict[str, Any]:
    """Model, logical/physical/usable cores, governor and frequency, and the SIMD flags that matter."""
    text = read_text(cpuinfo) or ""
    model = next(iter(re.findall(r"^model name\s*:\s*(.+)$", text, re.M)), platform.processor())
    cores = set()
    for block in text.split("\n\n"):
        fields = dict(re.findall(r"^(physical id|core id)\s*:\s*(\d+)", block, re.M))
        if "core id" in fields:
            cores.add((fields.get("physical id"), fields["core id"]))
    flags_line = next(iter(re.findall(r"^flags\s*:\s*(.+)$", text, re.M)), "")
    flags = set(flags_line.split())
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count() or 0
    cpufreq = sysfs / "cpu0" / "cpufreq"
    max_khz = read_text(cpufreq / "cpuinfo_max_freq")
    cur_khz = read_text(cpufreq / "scaling_cur_freq")
    return {
        "model": model or "unknown",
        "machine": platform.machine(),
        "logical_cpus": os.cpu_count(),
        "physical_cores": len(cores) or None,
        "usable_cpus": usable,
        "governor": read_text(cpufreq / "scaling_governor") or "not exposed",
        "max_mhz": int(max_khz) / 1000 if max_khz else None,
        "current_mhz": int(cur_khz) / 1000 if cur_khz else None,
        "flags": [flag for flag in CPU_FLAGS_OF_INTEREST if flag in flags],
        "kernel": platform.release(),
        "os": platform.platform(),
    }
