"""Verify's matrix-multiply checks: a repeating float64 reference, each dtype against it, and a third arm."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy
import torch
from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.stages.common.numerics import (
    TOLERANCES,
    Matmul,
    attribute,
    float64_matmul,
    rel_error,
    repeatable_reference,
    within,
)
from rigcheck.engine.stages.common.shared_cache import cached_tensor, generator_key

STAGE = "verify"


def device_matmul_into_poison(dtype: torch.dtype, device: torch.device, tf32: bool = False) -> Matmul:
    """Multiply on the device into an output pre-filled with NaN, so unwritten elements show."""

    def run(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a_d, b_d = a.to(device, dtype), b.to(device, dtype)
        out = torch.full((a.shape[0], b.shape[1]), float("nan"), dtype=dtype, device=device)
        before = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = tf32
        try:
            torch.matmul(a_d, b_d, out=out)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = before
        return out.float().cpu()

    return run


def numpy_float32_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(numpy.matmul(a.float().numpy(), b.float().numpy()))


def torch_cpu_float32_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return a.float().cpu() @ b.float().cpu()


def draw_pair(n: int, generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, n, generator=generator), torch.randn(n, n, generator=generator)


def check_reference(n: int, generator: torch.Generator, reference: Matmul = float64_matmul) -> Verdict:
    a, b = draw_pair(n, generator)
    return reference_verdict(n, repeat_check(a, b, reference))


def repeat_check(a: torch.Tensor, b: torch.Tensor, reference: Matmul = float64_matmul) -> tuple[bool, float]:
    """CPU only: does the float64 reference of (a, b) repeat bit for bit? (identical, fraction differing)"""
    _, identical, differing = repeatable_reference(a.double(), b.double(), reference)
    return identical, differing


def reference_verdict(n: int, repeated: tuple[bool, float]) -> Verdict:
    identical, differing = repeated
    if identical:
        return Verdict(
            STAGE,
            f"reference-{n}",
            Status.PASS,
            f"the float64 CPU reference at {n}x{n} is bit-identical on repeat",
            {"n": n},
        )
    return Verdict(
        STAGE,
        f"reference-{n}",
        Status.FAIL,
        f"the float64 CPU reference at {n}x{n} does not repeat ({differing:.2%} of elements differ): "
        "it is unusable, so no device can be judged against it (the CPU side is at fault, not the device)",
        {"n": n, "differing_fraction": differing},
    )


@dataclass(frozen=True)
class DtypeCase:
    """One dtype's inputs, drawn from the generator and rounded to the dtype, as both sides see them."""

    name: str
    n: int
    a: torch.Tensor
    b: torch.Tensor
    key: str  # the float64 reference's name in the run's shared folder


def dtype_case(name: str, n: int, generator: torch.Generator, reference: Matmul = float64_matmul) -> DtypeCase:
    key = f"float64 reference {name} {n} {generator_key(generator)} {reference.__module__}.{reference.__qualname__}"
    a, b = draw_pair(n, generator)
    if name in ("fp16", "bf16"):
        rounded = torch.float16 if name == "fp16" else torch.bfloat16
        a, b = a.to(rounded).float(), b.to(rounded).float()  # the reference sees the same inputs
    return DtypeCase(name, n, a, b, key)


def host_arms(
    case: DtypeCase, cpu_matmul: Matmul, reference: Matmul = float64_matmul
) -> tuple[torch.Tensor, torch.Tensor]:
    """CPU only, so it can run beside the device's multiply: (the float64 reference, the CPU arm's result)."""
    ref = cached_tensor(case.key, lambda: reference(case.a, case.b))
    return ref, cpu_matmul(case.a, case.b)


def check_dtype(
    name: str,
    n: int,
    device_label: str,
    generator: torch.Generator,
    device_matmul: Matmul,
    cpu_matmul: Matmul,
    cpu_label: str,
    reference: Matmul = float64_matmul,
) -> Iterator[Verdict]:
    """One dtype in line: the device against float64, and if the device and the CPU disagree, say who is wrong."""
    case = dtype_case(name, n, generator, reference)
    ref, cpu_result = host_arms(case, cpu_matmul, reference)
    yield from judge_dtype(case, device_matmul(case.a, case.b), ref, cpu_result, device_label, cpu_label)


def judge_dtype(
    case: DtypeCase,
    result: torch.Tensor,
    ref: torch.Tensor,
    cpu_result: torch.Tensor,
    device_label: str,
    cpu_label: str,
) -> Iterator[Verdict]:
    """The device's result against float64, and, where an arm is off, which side is wrong."""
    name, n = case.name, case.n
    tolerance = TOLERANCES[name]
    unwritten = int(torch.isnan(result).sum().item())
    device_error = rel_error(result, ref)
    cpu_error = rel_error(cpu_result, ref)
    numbers: dict[str, Any] = {
        "n": n,
        "dtype": name,
        "rel_error": device_error,
        "cpu_rel_error": cpu_error,
        "unwritten": unwritten,
    }
    ok = within(device_error, tolerance) and unwritten == 0
    what = f"{name} {n}x{n} on {device_label}: relative error {device_error:.2e} against float64"
    if unwritten:
        what += f"; {unwritten} output elements were never written"
    yield Verdict(
        STAGE,
        f"matmul-{name}",
        Status.PASS if ok else Status.FAIL,
        what + f" (tolerance {tolerance:g})",
        numbers,
        tolerance=tolerance,
        device=device_label,
    )
    disagreement = rel_error(result, cpu_result.double())
    if within(device_error, tolerance) and within(cpu_error, tolerance):
        return
    blame = attribute(device_error, cpu_error, tolerance, device_label, cpu_label)
    yield Verdict(
        STAGE,
        f"attribution-{name}",
        Status.FAIL,
        f"{device_label} and {cpu_label} disagree by {disagreement:.2e}; against float64 {device_label} is "
        f"off by {device_error:.2e} and {cpu_label} by {cpu_error:.2e}: {blame}",
        numbers | {"disagreement": disagreement, "blame": blame},
        tolerance=tolerance,
        device=device_label,
    )
