"""The timed matmul calls the sweep and max-find share: fresh random inputs, and enough sets to rotate past the L2."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import torch
from rigcheck.engine.stages.common.fp8 import find_fp8

TORCH_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}


@functools.cache
def _fp8_for(device: str) -> torch.dtype | None:
    return find_fp8(torch, torch.device(device))[0]


def fp8_dtype(device: torch.device) -> torch.dtype | None:
    """Probed once per device: every fp8 input set of the sweep and of max-find asks again."""
    return _fp8_for(str(device))


def matmul_call(dtype: str, m: int, n: int, k: int, device: torch.device) -> Callable[[], Any]:
    """A zero-argument call that multiplies fresh random inputs into a preallocated output, rewritten each time."""
    if dtype == "fp8":
        f8 = fp8_dtype(device)
        a = torch.randn(m, k, device=device).to(f8)
        b = torch.randn(n, k, device=device).to(f8).t()  # column-major, as _scaled_mm wants
        one = torch.tensor(1.0, device=device)
        return lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    torch_dtype = TORCH_DTYPES[dtype]
    a = torch.randn(m, k, device=device, dtype=torch_dtype)
    b = torch.randn(k, n, device=device, dtype=torch_dtype)
    out = torch.empty(m, n, device=device, dtype=torch_dtype)
    return lambda: torch.matmul(a, b, out=out)


def rotating_calls(
    dtype: str, m: int, n: int, k: int, device: torch.device, first: Callable[[], Any]
) -> list[Callable[[], Any]]:
    """Enough independent input sets that together they exceed twice the L2 (at most eight)."""
    l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or 64 * 2**20
    per_set = (m * k + k * n) * (1 if dtype == "fp8" else TORCH_DTYPES[dtype].itemsize)
    count = max(1, min(8, -(-2 * l2 // per_set)))
    return [first, *(matmul_call(dtype, m, n, k, device) for _ in range(count - 1))]
