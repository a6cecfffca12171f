"""Which dtypes a GPU runs on its matrix units, by architecture, with the source of each row."""

from __future__ import annotations

# NVIDIA, by compute capability: the tensor-core dtypes each generation added (CUDA programming
# guide, "Compute Capabilities" feature tables).
NVIDIA_MATRIX_DTYPES: list[tuple[tuple[int, int], str]] = [
    ((7, 0), "fp16"),
    ((8, 0), "bf16"),
    ((8, 0), "tf32"),
    ((8, 9), "fp8"),
    ((10, 0), "fp4"),
]

# AMD, by gfx architecture prefix: MFMA (CDNA) or WMMA (RDNA) input types (AMD ISA guides).
AMD_MATRIX_DTYPES: list[tuple[str, tuple[str, ...]]] = [
    ("gfx908", ("fp16", "bf16")),
    ("gfx90a", ("fp16", "bf16", "fp64")),
    ("gfx94", ("fp16", "bf16", "tf32", "fp8", "fp64")),
    ("gfx950", ("fp16", "bf16", "fp8", "fp6", "fp4", "fp64")),
    ("gfx11", ("fp16", "bf16")),
    ("gfx12", ("fp16", "bf16", "fp8")),
]


def nvidia_matrix_dtypes(major: int, minor: int) -> list[str]:
    return [dtype for since, dtype in NVIDIA_MATRIX_DTYPES if (major, minor) >= since]


def amd_matrix_dtypes(arch: str) -> list[str]:
    base = arch.split(":")[0]
    for prefix, dtypes in AMD_MATRIX_DTYPES:
        if base.startswith(prefix):
            return list(dtypes)
    return []


def cpu_matrix_dtypes(flags: list[str]) -> list[str]:
    """Reduced-precision types the CPU has instructions for (AMX tiles or AVX-512 extensions)."""
    found = ["fp32"]
    if "avx512_bf16" in flags or "amx_bf16" in flags:
        found.append("bf16")
    if "avx512_fp16" in flags or "amx_fp16" in flags:
        found.append("fp16")
    return found
