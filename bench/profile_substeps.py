"""The host-CPU sub-steps of verify, each timed alone in one process (issue 42): what a run pays on the CPU
before the GPU's figures can be judged. Plain torch and numpy, no rigcheck import, so it times the host
alone, whatever code is checked out.

Usage: python3 bench/profile_substeps.py [DEVICE]   (DEVICE: cuda:0 by default, or cpu)
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


def timed(what: str, work: Callable[[], object], repeats: int = 1) -> None:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    shown = ", ".join(f"{t:.3f}" for t in times)
    print(f"{what:58} {shown} s")


def main(device_name: str) -> None:
    start = time.perf_counter()
    import torch

    print(f"{'import torch':58} {time.perf_counter() - start:.3f} s")
    import numpy

    device = torch.device(device_name if device_name != "cpu" and torch.cuda.is_available() else "cpu")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {device}")
    if device.type == "cuda":
        timed("CUDA context (first tensor on the device)", lambda: torch.zeros(1, device=device), 1)
    generator = torch.Generator().manual_seed(1234)
    for n in (512, 1024, 2048, 4096):
        a, b = torch.randn(n, n, generator=generator), torch.randn(n, n, generator=generator)
        a64, b64 = a.double(), b.double()
        timed(f"float64 CPU matmul {n} (the reference)", lambda a64=a64, b64=b64: a64 @ b64, 2)
        timed(
            f"numpy float32 CPU matmul {n}",
            lambda a=a, b=b: numpy.matmul(a.numpy(), b.numpy()),
            2,
        )
        if device.type == "cuda":

            def on_device(a: torch.Tensor = a, b: torch.Tensor = b) -> None:
                (a.to(device) @ b.to(device)).cpu()

            timed(f"fp32 device matmul {n} with copies both ways", on_device, 2)
    timed("import torch._dynamo (torch.optim's first optimizer)", lambda: __import__("torch._dynamo"))
    model = torch.nn.Sequential(torch.nn.Conv2d(32, 32, 3, padding=1), torch.nn.GroupNorm(8, 32)).to(device)
    timed("first SGD optimizer (dynamo imported)", lambda: torch.optim.SGD(model.parameters(), lr=0.01))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda:0")
