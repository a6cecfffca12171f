"""Host bugs: the silent numerical defects of the machine itself (sgemm races, convolutions that do not repeat)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import torch
from rigcheck.engine.events import Event, Progress, Status, Verdict
from rigcheck.engine.facts.torch_build import loaded_blas
from rigcheck.engine.models.board_net import BoardNet, BoardNetConfig, random_batch
from rigcheck.engine.stage import StageContext
from rigcheck.engine.stages.common.devices import resolve_devices
from rigcheck.engine.stages.common.numerics import rel_error
from rigcheck.engine.stages.hostbugs.repeatability import onednn, repeat_twice, threads
from rigcheck.engine.stages.hostbugs.sgemm_race import (
    LibraryRecord,
    describe,
    hunt,
    numpy_matmul,
    summary_numbers,
    thread_counts,
    torch_matmul,
)

STAGE = "hostbugs"
THREAD_TOLERANCE = 1e-5

# (sgemm n, trials per thread count, conv input shape, board net config, model batch)
PLANS = {
    "quick": (256, 2, (32, 64, 7, 7), BoardNetConfig(32, 2), 64),
    "standard": (1024, 6, (256, 128, 7, 7), BoardNetConfig(128, 6), 256),
    "full": (1024, 20, (256, 128, 7, 7), BoardNetConfig(128, 6), 1024),
}


def numpy_kernel() -> str:
    for info in loaded_blas():
        if info.get("user_api") == "blas" and "numpy" in str(info.get("filepath", "")):
            return f"{info.get('internal_api')} {info.get('version')}, {info.get('architecture')} kernel"
    return "BLAS unknown to threadpoolctl"


def torch_kernel() -> str:
    config = torch.__config__.show()
    blas = next(
        (part.split("=")[1] for part in config.replace(",", " ").split() if part.startswith("BLAS_INFO=")),
        "?",
    )
    return f"{blas}, linked into torch"


def sgemm_verdicts(records: list[LibraryRecord], reference_repeats: bool, n: int) -> Iterator[Verdict]:
    if not reference_repeats:
        yield Verdict(
            STAGE,
            "sgemm-reference",
            Status.FAIL,
            "numpy's single-threaded float64 reference did not repeat bit for bit: no sgemm can be judged",
            {"n": n},
            device="cpu",
        )
        return
    for record in records:
        yield Verdict(
            STAGE,
            f"sgemm-{record.name}",
            Status.FAIL if record.bad_threads() else Status.PASS,
            describe(record),
            summary_numbers(record) | {"n": n},
            device="cpu",
        )
    bad = [r for r in records if r.bad_threads()]
    clean = [r for r in records if not r.bad_threads()]
    if bad and clean:
        names = ", ".join(f"{r.name} ({r.kernel})" for r in bad)
        yield Verdict(
            STAGE,
            "sgemm-attribution",
            Status.FAIL,
            f"the fault is in {names}: {', '.join(r.name for r in clean)} ran the same inputs at the same "
            "thread counts in this process and was right",
            {"at_fault": [r.name for r in bad], "clean": [r.name for r in clean]},
            device="cpu",
        )


def repeat_verdict(check: str, what: str, fraction: float, largest: float, device: str, fail: bool) -> Verdict:
    if fraction == 0.0:
        return Verdict(
            STAGE, check, Status.PASS, f"{what} is bit-identical on repeat", {"differing": 0.0}, device=device
        )
    return Verdict(
        STAGE,
        check,
        Status.FAIL if fail else Status.WARN,
        f"{what} does not repeat: {fraction:.2%} of elements differ, by up to {largest:.2e}",
        {"differing": fraction, "largest": largest},
        device=device,
    )


def cpu_conv_checks(shape: tuple[int, ...], config: BoardNetConfig, batch: int, cpus: int) -> Iterator[Verdict]:
    torch.manual_seed(5)
    conv = torch.nn.Conv2d(shape[1], shape[1], 3, padding=1)
    x = torch.randn(*shape)
    for enabled in (True, False):
        with onednn(enabled), threads(cpus):
            fraction, largest = repeat_twice(lambda: conv(x))
        path = "oneDNN" if enabled else "native (oneDNN off)"
        yield repeat_verdict(
            f"conv-repeat-{'onednn' if enabled else 'native'}",
            f"CPU Conv2d {tuple(shape)} via {path} at {cpus} threads",
            fraction,
            largest,
            "cpu",
            fail=True,
        )
    model = BoardNet(config).eval()
    boards, _, _ = random_batch(batch, "cpu", torch.Generator().manual_seed(5))
    with threads(cpus):
        fraction, largest = repeat_twice(lambda: model(boards)[0])
    yield repeat_verdict(
        "model-repeat-cpu", f"board net c{config.channels} forward on the CPU", fraction, largest, "cpu", True
    )
    with torch.no_grad():
        with threads(1):
            single = conv(x)
        with threads(cpus):
            multi = conv(x)
    error = rel_error(multi, single.double())
    yield Verdict(
        STAGE,
        "conv-threads",
        Status.PASS if error <= THREAD_TOLERANCE else Status.FAIL,
        f"CPU Conv2d at 1 and {cpus} threads agrees to {error:.1e} (tolerance {THREAD_TOLERANCE:g}; "
        "different thread counts may round differently, so this is not bit-equality)",
        {"rel_error": error},
        tolerance=THREAD_TOLERANCE,
        device="cpu",
    )


def gpu_repeat_checks(
    device: torch.device, shape: tuple[int, ...], config: BoardNetConfig, batch: int
) -> Iterator[Verdict]:
    label = str(device)
    torch.manual_seed(6)
    conv = torch.nn.Conv2d(shape[1], shape[1], 3, padding=1).to(device)
    x = torch.randn(*shape, device=device)
    a, b = torch.randn(2048, 2048, device=device), torch.randn(2048, 2048, device=device)
    model = BoardNet(config).to(device).eval()
    boards, _, _ = random_batch(batch, device, torch.Generator().manual_seed(6))
    for check, what, compute in (
        ("gpu-matmul-repeat", f"fp32 matmul 2048 on {label}", lambda: a @ b),
        ("gpu-conv-repeat", f"Conv2d {tuple(shape)} on {label}", lambda: conv(x)),
        ("gpu-model-repeat", f"board net c{config.channels} forward on {label}", lambda: model(boards)[0]),
    ):
        fraction, largest = repeat_twice(compute)
        yield repeat_verdict(check, what, fraction, largest, label, fail=False)


def summary(verdicts: list[Verdict]) -> Verdict:
    untrusted = [v for v in verdicts if v.status == Status.FAIL and not v.check.endswith("attribution")]
    if not untrusted:
        return Verdict(
            STAGE,
            "summary",
            Status.PASS,
            "every CPU reference in this process repeats and agrees with float64: comparisons against them stand",
        )
    names = "; ".join(v.check for v in untrusted)
    return Verdict(
        STAGE,
        "summary",
        Status.FAIL,
        f"these references in this process cannot be trusted, and every comparison against them is suspect: {names}",
        {"untrusted": [v.check for v in untrusted]},
    )


def run(context: StageContext) -> Iterator[Event]:
    spec = context.spec
    n, trials, shape, config, batch = PLANS[spec.profile]
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    counts = thread_counts(cpus)
    gpus = [d for d in (yield from resolve_devices(STAGE, spec.device)) if d.type == "cuda"]
    seen: list[Verdict] = []
    cpu_checks = spec.option("parts", "all") != "gpu"  # "gpu": the host's checks run once, in a child of their own
    total = (2 if cpu_checks else 0) + len(gpus)  # steps: sgemm hunt, CPU convolutions, one check per GPU
    if cpu_checks:
        yield Progress(STAGE, 0, total, f"sgemm at {counts} threads, {trials} trials each")
        libraries: dict[str, Any] = {
            "numpy": (numpy_matmul, numpy_kernel()),
            "torch": (torch_matmul, torch_kernel()),
        }
        records, repeats = hunt(libraries, counts, trials, n, cancelled=lambda: context.cancelled)
        for verdict in sgemm_verdicts(records, repeats, n):
            seen.append(verdict)
            yield verdict
        yield Progress(STAGE, 1, total, "CPU convolution repeatability")
        for verdict in cpu_conv_checks(shape, config, batch, cpus):
            seen.append(verdict)
            yield verdict
    for index, device in enumerate(gpus):
        yield Progress(STAGE, total - len(gpus) + index, total, f"repeatability on {device}")
        for verdict in gpu_repeat_checks(device, shape, config, batch):
            seen.append(verdict)
            yield verdict
    yield Progress(STAGE, total, total, "summary")
    yield summary(seen)
