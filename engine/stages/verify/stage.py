"""Verify: are the device's answers right? Everything is scored against a float64 CPU reference that repeats."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import torch
from rigcheck.engine.events import Event, Progress, Status, Verdict
from rigcheck.engine.models.board_net import BoardNetConfig
from rigcheck.engine.stage import StageContext
from rigcheck.engine.stages.common.devices import has_tf32, resolve_devices
from rigcheck.engine.stages.verify.host_side import HostSide
from rigcheck.engine.stages.verify.matmul import (
    device_matmul_into_poison,
    draw_pair,
    dtype_case,
    host_arms,
    judge_dtype,
    numpy_float32_matmul,
    reference_verdict,
    repeat_check,
)
from rigcheck.engine.stages.verify.memory import check_memory
from rigcheck.engine.stages.verify.model import (
    check_batchnorm_training,
    check_steps,
    device_pass,
    float64_pass,
    judge_model,
    model_case,
    soak,
)

STAGE = "verify"

# (fp32 size on a GPU, fp32 size on the CPU, fp16/bf16 size, model config, batch, soak steps, memory share)
PLANS = {
    "quick": (2048, 512, 512, BoardNetConfig(32, 2), 32, 80, 0.1),
    "standard": (4096, 1024, 1024, BoardNetConfig(64, 3), 64, 200, 0.5),
    "full": (4096, 2048, 1024, BoardNetConfig(128, 6), 128, 400, 0.8),
}


SHARES = 100  # a step's progress in hundredths, so a long step (the soak) moves the bar as it goes
SOAK_PROGRESS_S = 0.5  # the soak says how far it is at most this often


class Steps:
    """Progress counted in steps finished, so the bar reaches 100% only once the last step has ended."""

    def __init__(self, total: int) -> None:
        self.total, self.done = total, 0

    def begin(self, what: str) -> Progress:
        """Sent as a step starts: it counts the steps before this one."""
        event = Progress(STAGE, self.done * SHARES, self.total * SHARES, what)
        self.done += 1
        return event

    def within(self, part: float, what: str) -> Progress:
        """Part of the way (0 to 1) through the step begun last."""
        share = min(SHARES - 1, max(0, int(part * SHARES)))  # the step ends only with the next begin() or end()
        return Progress(STAGE, (self.done - 1) * SHARES + share, self.total * SHARES, what)

    def end(self) -> Progress:
        return Progress(STAGE, self.done * SHARES, self.total * SHARES, "finished")


def soak_progress(
    steps: Steps, items: Iterator[int | Verdict], total: int, clock: Callable[[], float]
) -> Iterator[Event]:
    """The soak's verdict, with progress within it (`soak step 120 of 200`) at most every SOAK_PROGRESS_S."""
    said = clock()
    for item in items:
        if isinstance(item, Verdict):
            yield item
        elif (now := clock()) - said >= SOAK_PROGRESS_S:
            said = now
            yield steps.within(item / total, f"soak step {item} of {total}")


def dtypes_for(device: torch.device) -> list[str]:
    return ["fp32", "tf32", "fp16", "bf16"] if has_tf32(device) else ["fp32", "fp16", "bf16"]


def step_count(device: torch.device, n: int, low_n: int) -> int:
    """References, one matmul per dtype, four model checks, and the memory check on a GPU."""
    return 1 + (low_n != n) + len(dtypes_for(device)) + 4 + (device.type == "cuda")


def run(context: StageContext) -> Iterator[Event]:
    spec = context.spec
    devices = yield from resolve_devices(STAGE, spec.device)
    if not devices:
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    gpu_n, cpu_n, low_n, config, batch, soak_steps, share = PLANS[spec.profile]
    sizes = {str(d): gpu_n if d.type == "cuda" else cpu_n for d in devices}
    steps = Steps(sum(step_count(d, sizes[str(d)], low_n) for d in devices))
    for device in devices:
        yield from verify_device(context, steps, device, sizes[str(device)], low_n, config, batch, soak_steps, share)
        if context.cancelled:
            return
    yield steps.end()


def verify_device(
    context: StageContext,
    steps: Steps,
    device: torch.device,
    n: int,
    low_n: int,
    config: BoardNetConfig,
    batch: int,
    soak_steps: int,
    share: float,
) -> Iterator[Event]:
    """On a GPU, the CPU's float64 work runs in a thread beside the device's (host_side); the verdicts are the
    ones the checks give in line, in the same order."""
    host = HostSide(beside=device.type == "cuda")
    host.start_import()  # torch.optim's, needed by the optimizer steps: imported while the references run
    try:
        yield from _verify_device(context, steps, host, device, n, low_n, config, batch, soak_steps, share)
    finally:
        host.close()


def _verify_device(
    context: StageContext,
    steps: Steps,
    host: HostSide,
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
    sizes = [n] if low_n == n else [n, low_n]
    yield steps.begin(f"float64 reference {n}x{n} twice" + (f", beside {label}'s multiplies" if host.beside else ""))
    repeats = {size: host.submit(repeat_check, *draw_pair(size, generator)) for size in sizes}
    names = dtypes_for(device)
    cases = [dtype_case(name, n if name in ("fp32", "tf32") else low_n, generator) for name in names]
    arms = [host.submit(host_arms, case, numpy_float32_matmul) for case in cases]
    forward = model_case(config, batch, device)
    forward64 = host.submit(float64_pass, forward)
    results = {}
    for case in cases:  # the device's multiplies, while the CPU computes their references
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}.get(case.name, torch.float32)
        results[case.name] = device_matmul_into_poison(dtype, device, tf32=case.name == "tf32")(case.a, case.b)
    outputs = device_pass(forward, device)
    verdicts: dict[int, Verdict] = {}
    for size in sizes:
        if size != n:
            yield steps.begin(f"float64 reference {size}x{size} twice")
        verdicts[size] = reference_verdict(size, repeats[size].result())
        yield verdicts[size]
    for case, arm in zip(cases, arms, strict=True):
        if context.cancelled:
            return
        yield steps.begin(f"matmul {case.name}")
        if verdicts[case.n].status != Status.PASS:
            yield Verdict(
                STAGE,
                f"matmul-{case.name}",
                Status.SKIP,
                "not judged: the float64 reference did not repeat",
                device=label,
            )
            continue
        ref, cpu_result = arm.result()
        yield from judge_dtype(case, results[case.name], ref, cpu_result, label, "numpy float32 (CPU)")
    yield steps.begin("model forward and gradients")
    yield from judge_model(forward, config, label, outputs, forward64.result())
    yield steps.begin("optimizer steps")
    host.wait_imports()
    yield check_steps(config, batch, device)
    yield steps.begin("BatchNorm in training mode")
    yield check_batchnorm_training(config, batch, device)
    if context.cancelled:
        return
    yield steps.begin(f"soak of {soak_steps} steps")
    yield from soak_progress(steps, soak(config, batch, soak_steps, device), soak_steps, time.monotonic)
    if device.type == "cuda":
        yield steps.begin("memory")
        yield from check_memory(device, share)
