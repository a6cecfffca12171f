"""A plain loop per GPU, sharing no code with rigcheck: bf16/fp32 matmul, device copy and pinned host-to-device,
timed by the wall clock around a synchronize. The independent check on rigcheck's per-device figures."""

from __future__ import annotations

import json
import sys
import time

import torch


def wall(fn, device: torch.device, reps: int) -> float:  # type: ignore[no-untyped-def]
    for _ in range(3):
        fn()
    torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize(device)
    return (time.perf_counter() - t0) / reps


def one_gpu(index: int) -> dict[str, float]:
    device = torch.device(f"cuda:{index}")
    out: dict[str, float] = {}
    for dtype, name, reps in ((torch.bfloat16, "bf16", 200), (torch.float32, "fp32", 20)):
        a = torch.randn(4096, 4096, device=device, dtype=dtype)
        b = torch.randn(4096, 4096, device=device, dtype=dtype)
        out[f"matmul {name} 4096 TFLOP/s"] = 2 * 4096**3 / wall(lambda a=a, b=b: a @ b, device, reps) / 1e12
    src = torch.randn(2**30 // 4, device=device)
    dst = torch.empty_like(src)
    out["device copy 1 GiB GB/s"] = 2 * 2**30 / wall(lambda: dst.copy_(src), device, 20) / 1e9
    host = torch.randn(2**28 // 4).pin_memory()
    gpu = torch.empty(2**28 // 4, device=device)
    out["h2d pinned 256 MiB GB/s"] = 2**28 / wall(lambda: gpu.copy_(host, non_blocking=True), device, 20) / 1e9
    return out


def main() -> None:
    results = {f"cuda:{i}": one_gpu(i) for i in range(torch.cuda.device_count())}
    for device, figures in results.items():
        print(device, "  ".join(f"{k} {v:,.1f}" for k, v in figures.items()))
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
