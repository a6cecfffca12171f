"""Verify: are the device's answers right? Everything is scored against a float64 CPU reference that repeats."""

from __future__ import annotations

from collections.abc import Iterator

import torch

from ..events import Event, Progress, Status, Verdict
from ..models.board_net import BoardNetConfig
from ..stage import StageContext
from .devices import has_tf32, resolve_devices
from .verify_matmul import (
    check_dtype,
    check_reference,
    device_matmul_into_poison,
    numpy_float32_matmul,
)
from .verify_memory import check_memory
from .verify_model import check_batchnorm_training, check_forward_and_gradients, check_soak, check_steps

STAGE = "verify"

# (fp32 size on a GPU, fp32 size on the CPU, fp16/bf16 size, model config, batch, soak steps, memory share)
PLANS = {
    "quick": (2048, 512, 512, BoardNetConfig(32, 2), 32, 80, 0.1),
    "standard": (4096, 1024, 1024, BoardNetConfig(64, 3), 64, 200, 0.5),
    "full": (4096, 2048, 1024, BoardNetConfig(128, 6), 128, 400, 0.8),
}


def run(context: StageContext) -> Iterator[Event]:
    spec = context.spec
    devices = yield from resolve_devices(STAGE, spec.device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gpu_n, cpu_n, low_n, config, batch, soak_steps, share = PLANS[spec.profile]
    for device in devices:
        yield from verify_device(
            context,
            device,
            gpu_n if device.type == "cuda" else cpu_n,
            low_n,
            config,
            batch,
            soak_steps,
            share,
        )


def verify_device(
    context: StageContext,
    device: torch.device,
    n: int,
    low_n: int,
    config: BoardNetConfig,
    batch: int,
    soak_steps: int,
    share: float,
) -> Iterator[Event]:
    label = str(device)
    generator = torch.Generator().manual_seed(1234)
    dtypes = ["fp32", "tf32", "fp16", "bf16"] if has_tf32(device) else ["fp32", "fp16", "bf16"]
    steps = 2 + len(dtypes) + 4 + (1 if device.type == "cuda" else 0)
    done = 0

    def progress(what: str) -> Progress:
        nonlocal done
        done += 1
        return Progress(STAGE, done, steps, what)

    yield progress(f"float64 reference {n}x{n} twice")
    reference = check_reference(n, generator)
    yield reference
    low_reference = check_reference(low_n, generator) if low_n != n else reference
    if low_n != n:
        yield low_reference
    yield progress("reference")
    for name in dtypes:
        if context.cancelled:
            return
        yield progress(f"matmul {name}")
        size = n if name in ("fp32", "tf32") else low_n
        if (reference if size == n else low_reference).status != Status.PASS:
            yield Verdict(
                STAGE,
                f"matmul-{name}",
                Status.SKIP,
                "not judged: the float64 reference did not repeat",
                device=label,
            )
            continue
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(name, torch.float32)
        device_matmul = device_matmul_into_poison(dtype, device, tf32=name == "tf32")
        yield from check_dtype(name, size, label, generator, device_matmul, numpy_float32_matmul, "numpy float32 (CPU)")
    yield progress("model forward and gradients")
    yield from check_forward_and_gradients(config, batch, device)
    yield progress("optimizer steps")
    yield check_steps(config, batch, device)
    yield progress("BatchNorm in training mode")
    yield check_batchnorm_training(config, batch, device)
    if context.cancelled:
        return
    yield progress(f"soak of {soak_steps} steps")
    yield check_soak(config, batch, soak_steps, device)
    if device.type == "cuda":
        yield progress("memory")
        yield from check_memory(device, share)
