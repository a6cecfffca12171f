"""Which fp8 type a GPU multiplies natively, by trying a tiny scaled matmul (Probe and matmul share it)."""

from __future__ import annotations

from typing import Any

FP8_NAMES = ("float8_e4m3fn", "float8_e4m3fnuz")  # NVIDIA and MI300-style encodings


def find_fp8(torch: Any, device: Any) -> tuple[Any, str]:
    """(the fp8 dtype, its name) when one runs, else (None, why not)."""
    why = "no float8 dtype in this torch"
    for name in FP8_NAMES:
        dtype = getattr(torch, name, None)
        if dtype is None:
            continue
        try:
            a = torch.randn(32, 32, device=device).to(dtype)
            one = torch.tensor(1.0, device=device)
            torch._scaled_mm(a, a.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
            return dtype, name
        except Exception as error:
            why = str(error).splitlines()[0][:120] if str(error).strip() else type(error).__name__
    return None, why
