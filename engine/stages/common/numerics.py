"""Scoring results against float64: relative errors, a reference that must repeat, and which side is wrong."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

# Relative Frobenius error allowed per dtype against float64 of the same (already rounded) inputs.
TOLERANCES = {"fp64": 1e-12, "fp32": 1e-5, "tf32": 1e-3, "fp16": 5e-3, "bf16": 1e-2}
DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}

Matmul = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


def rel_error(result: Any, reference: torch.Tensor) -> float:
    """||result - ref|| / ||ref|| in float64 on the CPU; NaN when the result holds NaN or Inf."""
    r = torch.as_tensor(result).detach().to("cpu", torch.float64)
    if not torch.isfinite(r).all():
        return math.nan
    ref = reference.to("cpu", torch.float64)
    return (torch.linalg.vector_norm(r - ref) / torch.linalg.vector_norm(ref)).item()


def within(error: float, tolerance: float) -> bool:
    """NaN and Inf never pass."""
    return math.isfinite(error) and error <= tolerance


def float64_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.to("cpu", torch.float64) @ b.to("cpu", torch.float64)


def repeatable_reference(
    a: torch.Tensor, b: torch.Tensor, matmul: Matmul = float64_matmul
) -> tuple[torch.Tensor, bool, float]:
    """The float64 reference computed twice: (reference, bit-identical?, fraction of elements that differ)."""
    first, second = matmul(a, b), matmul(a, b)
    identical = torch.equal(first, second)
    differing = 0.0 if identical else (first != second).double().mean().item()
    return first, identical, differing


def attribute(device_error: float, cpu_error: float, tolerance: float, device_name: str, cpu_name: str) -> str:
    """Which side is wrong, once the two arms disagree, judged by their distance from float64."""
    device_ok, cpu_ok = within(device_error, tolerance), within(cpu_error, tolerance)
    if device_ok and not cpu_ok:
        return f"{cpu_name} is wrong; {device_name} agrees with float64"
    if cpu_ok and not device_ok:
        return f"{device_name} is wrong; {cpu_name} agrees with float64"
    if not device_ok and not cpu_ok:
        return f"both {device_name} and {cpu_name} are off from float64"
    return "both are within tolerance of float64; they differ only by rounding"
