"""Which dtypes a GPU runs on its matrix units, by architecture, with the source of each row, and
which dtypes run there only emulated or rate-limited."""

from __future__ import annotations

import re

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


# Dtypes that run, but without fast hardware for them (CUDA programming guide, "Arithmetic
# Instructions" throughput table; AMD ISA guides): a matrix multiply in them converts to fp32 and
# runs at most at the fp32 rate.
NVIDIA_SLOW_FP16 = {
    "sm_50": "fp16 emulated: sm_50 has no fp16 arithmetic",
    "sm_52": "fp16 emulated: sm_52 has no fp16 arithmetic",
    "sm_61": "fp16 runs at 1/64 of fp32 on sm_61",
}
BF16_NATIVE_SINCE = (8, 0)  # NVIDIA: bf16 arithmetic came with sm_80 (Ampere)
AMD_NO_BF16_MATRIX = ("gfx900", "gfx906", "gfx101", "gfx103")  # Vega and RDNA 1-2: no bf16 matrix instructions


def slow_dtypes(arch: str) -> dict[str, str]:
    """Each dtype that runs on `arch` (sm_61, gfx1030) only emulated or rate-limited, with the sentence
    that says so; its matrix multiplies reach at most the fp32 rate."""
    base = arch.split(":")[0]
    notes: dict[str, str] = {}
    sm = re.fullmatch(r"sm_(\d+)(\d)", base)
    if sm:
        if base in NVIDIA_SLOW_FP16:
            notes["fp16"] = NVIDIA_SLOW_FP16[base]
        if (int(sm.group(1)), int(sm.group(2))) < BF16_NATIVE_SINCE:
            notes["bf16"] = f"bf16 emulated: {base} has no native bf16 (it came with sm_80)"
    elif base.startswith(AMD_NO_BF16_MATRIX):
        notes["bf16"] = f"bf16 emulated: {base} has no bf16 matrix instructions"
    return notes
