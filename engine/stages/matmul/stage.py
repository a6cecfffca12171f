"""Matmul throughput: a sweep of sizes and dtypes, timed with device events, against the datasheet peak."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy
import torch
from rigcheck.engine.events import Event, LogLine, Measurement, Progress, Status, Verdict
from rigcheck.engine.measure.references import reference_for
from rigcheck.engine.stage import StageContext
from rigcheck.engine.stages.common.devices import has_tf32, resolve_devices
from rigcheck.engine.stages.common.figures import checked, device_identity, usable
from rigcheck.engine.stages.common.limits import cpu_limit, gpu_matmul_limit
from rigcheck.engine.stages.common.peaks import matmul_peak
from rigcheck.engine.stages.common.timing import BENCHMARK_VERSION, on_device, time_calls, time_grouped
from rigcheck.engine.stages.matmul.calls import fp8_dtype, matmul_call, rotating_calls
from rigcheck.engine.stages.matmul.reference import judged
from rigcheck.engine.stages.matmul.search import max_find

STAGE = "matmul"
GPU_SIZES = {"quick": [4096], "standard": [1024, 4096, 8192], "full": [1024, 2048, 4096, 8192, 16384]}
CPU_SIZES = {"quick": [256, 512], "standard": [512, 1024, 2048], "full": [512, 1024, 2048, 4096]}
COOL_DOWN_S = 0.3
MEASURES = (
    f"burst: after a {COOL_DOWN_S} s pause, the median of 20 groups of about 2 ms; operands rotated past twice "
    "the L2 and the L2 overwritten before each group (a loop kept busy for seconds, on operands left in L2, "
    "gives another figure)"
)


def gpu_dtypes(device: torch.device) -> list[str]:
    names = ["fp32", "fp16", "bf16"]
    if has_tf32(device):
        names.insert(1, "tf32")
    if fp8_dtype(device) is not None:
        names.append("fp8")
    return names


def set_tf32(enabled: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = enabled


def measure_point(
    dtype: str, m: int, n: int, k: int, device: torch.device, device_name: str, library: str = "torch"
) -> Iterator[Event]:
    """One point of the sweep: the figure, checked against its clocks and its limit."""
    set_tf32(dtype == "tf32")
    if library == "numpy":
        a = numpy.random.default_rng(0).standard_normal((m, k), dtype=numpy.float32)
        b = numpy.random.default_rng(1).standard_normal((k, n), dtype=numpy.float32)
        out = numpy.empty((m, n), dtype=numpy.float32)
        call: Callable[[], Any] = lambda: numpy.matmul(a, b, out=out)  # noqa: E731
    else:
        call = matmul_call(dtype, m, n, k, device)
    if device.type == "cuda":
        # After a pause: on a power-capped GPU a sweep heats up and later points run at a lower
        # clock (an H200 at 700 W fell from 1980 to about 1450 MHz within a second of bf16 8192).
        time.sleep(COOL_DOWN_S)
    start = time.time()  # after the pause, so the figure's telemetry window holds only its own work
    if device.type == "cuda":
        stats = time_grouped(rotating_calls(dtype, m, n, k, device, call), device)
        limit = gpu_matmul_limit(device, dtype)
    else:
        stats = time_calls(call, device, min_reps=10, min_seconds=0.5)
        limit = cpu_limit(dtype)
    flops = 2.0 * m * n * k
    scale, unit = (1e12, "TFLOP/s") if device.type == "cuda" else (1e9, "GFLOP/s")
    median, best, spread = (value / scale for value in stats.rate(flops))
    peak, source = matmul_peak(device_name, dtype) if device.type == "cuda" else (None, None)
    shape = f"{m}" if m == n == k else f"{m}x{n}x{k}"
    params = {
        "dtype": dtype,
        "m": m,
        "n": n,
        "k": k,
        "library": library,
        "best": best,
        "peak": peak,
        "peak_source": source,
        "share_of_peak": median / peak if peak else None,
        "bound": "compute" if device.type == "cuda" else "host",
        "threads": threads_used(library) if device.type == "cpu" else 1,
        "benchmark_version": BENCHMARK_VERSION,
    } | device_identity(device)
    if device.type == "cuda":
        params["measures"] = MEASURES
    name = f"matmul {dtype} {shape}" + ("" if library == "torch" else f" ({library})")
    figure = Measurement(STAGE, name, median, unit, spread, len(stats.times), str(device), params, t_start=start)
    yield from checked(figure, stats, limit)


def model_hints(device: torch.device) -> tuple[int | None, str | None]:
    """SM count and architecture, which tell apart models whose names alone do not (H100 SXM and PCIe)."""
    props = torch.cuda.get_device_properties(device)
    return getattr(props, "multi_processor_count", None), getattr(props, "gcnArchName", None)


def threads_used(library: str) -> int:
    """The CPUs a CPU figure's own threads wanted: torch's pool, or numpy's BLAS pool."""
    if library == "numpy":
        try:
            from threadpoolctl import threadpool_info

            pools = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
            if pools:
                return max(pools)
        except ImportError:
            pass
    return torch.get_num_threads()


def warm_up_cpu(seconds: float = 1.0) -> None:
    """Keep the thread pools busy for a while first: right after a child starts, the first CPU figure
    was seen 10-60x low on a 2-core VM (one point only), and a second of work beforehand removes it."""
    a = torch.randn(512, 512)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        a @ a


def sweep(context: StageContext, device: torch.device) -> Iterator[Event]:
    label = str(device)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    if device.type == "cuda":
        points = [(d, s, "torch") for s in GPU_SIZES[context.spec.profile] for d in gpu_dtypes(device)]
    else:
        sizes = CPU_SIZES[context.spec.profile]
        # one library at a time: torch's OpenMP threads spin after each call and would slow numpy's BLAS
        points = [(d, s, lib) for d, lib in (("fp32", "torch"), ("bf16", "torch"), ("fp32", "numpy")) for s in sizes]
    results: list[Measurement] = []
    slow: dict[tuple[str, str], float] = {}  # (dtype, library) -> its rate as a share of fp32's, once too slow
    if device.type == "cpu":
        warm_up_cpu()
    for index, (dtype, size, library) in enumerate(points):
        if context.cancelled:
            return
        if (dtype, library) in slow:
            continue
        yield Progress(STAGE, index, len(points), f"{dtype} {size} ({library}) on {label}")
        try:
            events = list(measure_point(dtype, size, size, size, device, device_name, library))
        except torch.OutOfMemoryError as error:
            yield Verdict(STAGE, f"{dtype}-{size}", Status.SKIP, f"does not fit: {str(error)[:160]}", device=label)
            continue
        for event in events:
            if isinstance(event, Measurement):
                results.append(event)
                share = emulated_share(event, results) if device.type == "cpu" else None
                if share is not None and size != points[-1][1]:
                    slow[(dtype, library)] = share
                    yield Verdict(
                        STAGE,
                        f"{dtype}-larger",
                        Status.SKIP,
                        f"{dtype} on this CPU runs at {share:.1%} of fp32 ({event.value:.3g} GFLOP/s at {size}): "
                        f"no native {dtype} matrix unit (AVX-512 BF16 or AMX), so the larger {dtype} sizes, which "
                        "would take minutes each, are skipped",
                        {"share_of_fp32": share},
                        device=label,
                    )
                if event.params["noisy"]:
                    yield LogLine(STAGE, f"{event.name}: noisy, spread {event.params['spread_rel']:.0%}", "warn")
            yield event
    set_tf32(False)
    if device.type == "cuda":
        sms, arch = model_hints(device)
        yield from summary_verdicts(results, label, device_name, context.spec.option("baseline"), sms, arch)
    else:
        yield from summary_verdicts(results, label)


BEYOND_USE_SPREAD = 0.25  # a figure whose rates spread more than this share of their median is no best


def too_noisy(figure: Measurement) -> bool:
    """Spread so wide that the median says little: it is shown, labelled NOISY, but never picked as a best."""
    spread = figure.params.get("spread_rel")
    return spread is not None and spread > BEYOND_USE_SPREAD


EMULATED_SHARE = 1 / 16  # a CPU dtype slower than this share of fp32 at the same size runs without hardware


def emulated_share(figure: Measurement, results: list[Measurement]) -> float | None:
    """The share of fp32's rate a CPU figure of another dtype reached at the same size, where it is so low
    that the dtype runs without hardware support; None otherwise."""
    dtype, size = figure.params.get("dtype"), figure.params.get("m")
    if dtype in (None, "fp32"):
        return None
    fp32 = [r.value for r in results if r.params.get("dtype") == "fp32" and r.params.get("m") == size and r.value > 0]
    if not fp32 or figure.value <= 0:
        return None
    share = figure.value / max(fp32)
    return share if share < EMULATED_SHARE else None


def summary_verdicts(
    results: list[Measurement],
    label: str,
    device_name: str | None = None,
    baseline: dict[str, Any] | None = None,
    sms: int | None = None,
    arch: str | None = None,
) -> Iterator[Verdict]:
    """The best figure of each dtype, judged on a GPU against its model's reference (or the baseline's); and the
    noisy figures. `device_name` is None on the CPU: no reference there."""
    by_dtype: dict[str, Measurement] = {}
    unusable: dict[str, list[Measurement]] = {}  # too noisy to stand as a best
    for m in filter(usable, results):
        key = m.params["dtype"] + ("" if m.params["library"] == "torch" else f" ({m.params['library']})")
        if too_noisy(m):
            unusable.setdefault(key, []).append(m)
        elif key not in by_dtype or m.value > by_dtype[key].value:
            by_dtype[key] = m
    for key, figures in unusable.items():
        if key in by_dtype:
            continue
        spreads = ", ".join(f"{m.name} ±{m.params['spread_rel']:.0%}" for m in figures)
        yield Verdict(
            STAGE,
            f"best-{key}",
            Status.WARN,
            f"no best {key} on {label}: every figure spread more than {BEYOND_USE_SPREAD:.0%} of its median "
            f"({spreads}); next: run it again on a quiet host (`--wait-quiet 120`)",
            {"noisy": [m.name for m in figures]},
            device=label,
        )
    # launch-bound figures are noisy by nature and are labelled so on their own; they do not warn
    noisy = [m.name for m in results if m.params["noisy"] and usable(m) and not m.params.get("launch_bound")]
    for key, best in by_dtype.items():
        share = best.params["share_of_peak"]
        tail = f", {share:.0%} of the datasheet's {best.params['peak']:g}" if share else ""
        status, cited, ending, against = Status.PASS, "", "", {}
        if device_name is not None:
            reference = reference_for(device_name, f"best-{key}", baseline, sms, arch)
            status, cited, ending, against = judged(best.value, reference, device_name, best.name)
        yield Verdict(
            STAGE,
            f"best-{key}",
            status,
            f"best {key} on {label}: {best.value:.4g} {best.unit} median at {best.params['m']}{cited}{tail}{ending}",
            {"value": best.value, "unit": best.unit, "share_of_peak": share, "shape": best.name} | against,
            device=label,
        )
    if noisy:
        yield Verdict(
            STAGE,
            "noise",
            Status.WARN,
            f"{len(noisy)} figure(s) were noisy (interquartile spread over 5% of the median): {', '.join(noisy)}",
            {"noisy": noisy},
            device=label,
        )


def run(context: StageContext) -> Iterator[Event]:
    spec = context.spec
    devices = yield from resolve_devices(STAGE, spec.device)
    for device in devices:
        with on_device(device):
            yield from sweep(context, device)
            if device.type == "cuda" and (spec.option("max_find", False) or spec.profile == "full"):
                yield from max_find(context, device, float(spec.option("max_find_seconds", 60.0)))
