"""Matmul throughput: a sweep of sizes and dtypes, timed with device events, against the datasheet peak."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import numpy
import torch
from rigcheck.engine.events import Event, LogLine, Measurement, Progress
from rigcheck.engine.stage import StageContext
from rigcheck.engine.stages.common.devices import has_tf32, resolve_devices
from rigcheck.engine.stages.common.figures import checked, device_identity, math_mode
from rigcheck.engine.stages.common.limits import bus_id, cpu_limit, gpu_matmul_limit
from rigcheck.engine.stages.common.mechanism import cpu_threads, gpu_math
from rigcheck.engine.stages.common.oom import does_not_fit
from rigcheck.engine.stages.common.peaks import matmul_peak
from rigcheck.engine.stages.common.timing import BENCHMARK_VERSION, on_device, time_calls, time_grouped
from rigcheck.engine.stages.matmul.calls import fp8_dtype, matmul_call, rotating_calls
from rigcheck.engine.stages.matmul.cpu_dtypes import cpu_dtype_skips, native_cpu_dtypes, no_native_unit
from rigcheck.engine.stages.matmul.remeasure import WAIT_S, wait_for_idle, waited_words
from rigcheck.engine.stages.matmul.search import max_find
from rigcheck.engine.stages.matmul.steady import Warmed, clock_reader, kept, the_figure, warm_up, worth_again
from rigcheck.engine.stages.matmul.verdicts import BEYOND_USE_SPREAD, bests, failing_bests, summary_verdicts, too_noisy

__all__ = ["BEYOND_USE_SPREAD", "bests", "native_cpu_dtypes", "summary_verdicts", "too_noisy"]

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
    dtype: str,
    m: int,
    n: int,
    k: int,
    device: torch.device,
    device_name: str,
    library: str = "torch",
    again: dict[str, Any] | None = None,
) -> Iterator[Event]:
    """One point of the sweep: the figure, checked against its clocks and its limit. `again`: this is the
    point measured a second time, with how long it waited and the first figure (its name says "again")."""
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
    params |= ran_with(device, device_name, library)
    if device.type == "cuda":
        params["measures"] = MEASURES
    name = f"matmul {dtype} {shape}" + ("" if library == "torch" else f" ({library})") + (" again" if again else "")
    params |= {"remeasured": again} if again else {}
    figure = Measurement(STAGE, name, median, unit, spread, len(stats.times), str(device), params, t_start=start)
    yield from checked(figure, stats, limit)


def ran_with(device: torch.device, device_name: str, library: str) -> dict[str, Any]:
    """What the figure actually ran with (engine/stages/common/mechanism.py): a CPU figure's threads against the
    CPUs it may use, a GPU figure's math mode."""
    if device.type == "cpu":
        return {"mechanism": cpu_threads(library, torch.get_num_threads())}
    mode = math_mode()
    fp32_peak = matmul_peak(device_name, "fp32")[0]
    return {"math_mode": gpu_math(mode.allow_tf32, mode.float32_precision, mode.cudnn_allow_tf32, fp32_peak)}


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


def warm_up_gpu(device: torch.device) -> Warmed:
    """Bring the GPU to its working clock before the first timed figure: fp32 4096 multiplies (every GPU runs fp32;
    about 20 ms a turn on an H100) until the SM clock settles (read through NVML), so the first sizes are not
    measured while the clock ramps up from idle."""
    a = torch.randn(4096, 4096, device=device, dtype=torch.float32)
    out = torch.empty_like(a)

    def work() -> None:
        for _ in range(4):
            torch.matmul(a, a, out=out)
        torch.cuda.synchronize(device)

    read, close = clock_reader(bus_id(device))
    try:
        return warm_up(work, read)
    finally:
        close()


def measure_again(
    first: Measurement, device: torch.device, device_name: str, results: list[Measurement], limit_s: float
) -> Iterator[Event]:
    """A best figure that would FAIL, measured once more after a bounded wait for the GPU to go idle (the
    wait and the first figure in its params): someone else's load must not fail the GPU. Cheapest here, in the
    child that holds the inputs' shapes and a warm CUDA context; the parent judges whether it was disturbed too."""
    waited = wait_for_idle(first.params.get("pci_bus_id"), limit_s)
    again = {"words": waited_words(waited), "waited_s": round(waited.seconds, 1), "first": first.value}
    p = first.params
    for event in measure_point(p["dtype"], p["m"], p["n"], p["k"], device, device_name, p["library"], again):
        if isinstance(event, Measurement):
            results.append(event)
        yield event


def sweep(context: StageContext, device: torch.device) -> Iterator[Event]:
    label = str(device)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    sizes = CPU_SIZES[context.spec.profile]
    if device.type == "cuda":
        points = [(d, s, "torch") for s in GPU_SIZES[context.spec.profile] for d in gpu_dtypes(device)]
    else:
        # one library at a time: torch's OpenMP threads spin after each call and would slow numpy's BLAS
        points = [(d, s, lib) for d, lib in (("fp32", "torch"), ("bf16", "torch"), ("fp32", "numpy")) for s in sizes]
    results: list[Measurement] = []
    if device.type == "cuda":
        try:
            warmed = warm_up_gpu(device).words()
        except torch.OutOfMemoryError:  # too little free for 128 MiB: the figures say what fits
            warmed = "GPU not warmed up: no memory free for it"
        print(f"matmul on {label}: {warmed}", flush=True)  # in the stage's log too
        yield LogLine(STAGE, warmed)
    if device.type == "cpu":
        warm_up_cpu()
        native = native_cpu_dtypes()
        yield from cpu_dtype_skips(points, label, native)
        points = [p for p in points if not no_native_unit(p, sizes, native)]
    for index, (dtype, size, library) in enumerate(points):
        if context.cancelled:
            return
        yield Progress(STAGE, index, len(points), f"{dtype} {size} ({library}) on {label}")
        try:
            events = list(measure_point(dtype, size, size, size, device, device_name, library))
            first = the_figure(events)
            if first is not None and worth_again(first):  # noise is measured again, not reported as a fault
                yield LogLine(STAGE, f"{first.name}: noisy, spread {first.params['spread_rel']:.0%}; measuring again")
                again = list(measure_point(dtype, size, size, size, device, device_name, library))
                second = the_figure(again)
                events = again if second is not None and kept(first, second) else events
        except torch.OutOfMemoryError as error:
            yield does_not_fit(STAGE, f"{dtype}-{size}", device, f"{dtype} {size}", error)
            continue
        for event in events:
            if isinstance(event, Measurement):
                results.append(event)
                if event.params["noisy"]:
                    yield LogLine(STAGE, f"{event.name}: noisy, spread {event.params['spread_rel']:.0%}", "warn")
            yield event
    set_tf32(False)
    if device.type == "cuda":
        sms, arch = model_hints(device)
        baseline = context.spec.option("baseline")
        waits_left = WAIT_S  # one bounded wait for all the figures measured again, not one each
        for first in failing_bests(results, device_name, baseline, sms, arch):
            if context.cancelled:
                return
            yield Progress(STAGE, len(points), len(points) + 1, f"{first.name} again, after the GPU goes idle")
            started = time.monotonic()
            yield from measure_again(first, device, device_name, results, max(0.0, waits_left))
            waits_left -= time.monotonic() - started
        set_tf32(False)
        yield from summary_verdicts(results, label, device_name, baseline, sms, arch)
    else:
        yield from summary_verdicts(results, label)


def run(context: StageContext) -> Iterator[Event]:
    spec = context.spec
    devices = yield from resolve_devices(STAGE, spec.device)
    for device in devices:
        with on_device(device):
            yield from sweep(context, device)
            if device.type == "cuda" and (spec.option("max_find", False) or spec.profile == "full"):
                yield from max_find(context, device, float(spec.option("max_find_seconds", 60.0)))
