"""Which reduced-precision dtypes the CPU has matrix units for, from its flags (never from a measured speed), and
the SKIP that says the larger sizes of the others are left out."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.facts.dtypes import cpu_matrix_dtypes

STAGE = "matmul"


Point = tuple[str, int, str]


def native_cpu_dtypes(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str] | None:
    """The reduced-precision dtypes this CPU has matrix instructions for, from its flags (x86: AVX-512 BF16,
    AMX; Arm: the bf16 feature), as probe lists them; None where the flags cannot be read. Never inferred
    from a speed: a rate measured under contention once called an avx512_bf16 CPU one without it."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return None
    x86 = re.findall(r"^flags\s*:\s*(.+)$", text, re.M)
    if x86:
        return set(cpu_matrix_dtypes(x86[0].split())) - {"fp32"}
    arm = re.findall(r"^Features\s*:\s*(.+)$", text, re.M)
    if arm:
        return {"bf16"} if set(arm[0].split()) & {"bf16", "svebf16"} else set()
    return None


def no_native_unit(point: Point, sizes: list[int], native: set[str] | None) -> bool:
    """A CPU point past the smallest size of a dtype the CPU has no matrix unit for (`native` None: the flags
    could not be read, so every point is measured): it would take minutes."""
    dtype, size, _ = point
    return dtype != "fp32" and native is not None and dtype not in native and size != min(sizes)


def cpu_dtype_skips(points: list[Point], label: str, native: set[str] | None) -> Iterator[Verdict]:
    """One SKIP per dtype without a native unit, saying so from the CPU's flags."""
    if native is None:
        return
    for dtype in sorted({d for d, _, _ in points if d != "fp32" and d not in native}):
        yield Verdict(
            STAGE,
            f"{dtype}-larger",
            Status.SKIP,
            f"this CPU's flags show no native {dtype} matrix unit (AVX-512 BF16 or AMX): {dtype} is measured at "
            f"the smallest size only; the larger sizes would take minutes each",
            {"native_dtypes": sorted(native)},
            device=label,
        )
