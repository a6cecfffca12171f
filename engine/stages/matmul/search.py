"""Max-find, in the spirit of mamf-finder: search bf16 shapes for the highest achievable matmul rate.

Screening uses short bursts; finalists are re-measured after a pause, because a sustained burst on
a power-capped GPU runs at a lower clock than the first milliseconds (seen on the H200 at 700 W).
"""

from __future__ import annotations

import itertools
import statistics
import time
from collections.abc import Iterator

import torch
from rigcheck.engine.events import Event, Measurement, Progress, Status, Verdict
from rigcheck.engine.measure.arch_peaks import props_of
from rigcheck.engine.measure.arch_shares import lookup
from rigcheck.engine.measure.plausibility import over_limit
from rigcheck.engine.measure.stats import TimingStats
from rigcheck.engine.stage import StageContext
from rigcheck.engine.stages.common.figures import checked, device_identity, usable
from rigcheck.engine.stages.common.limits import gpu_matmul_limit
from rigcheck.engine.stages.common.peaks import matmul_peak
from rigcheck.engine.stages.common.timing import BENCHMARK_VERSION, time_grouped
from rigcheck.engine.stages.matmul.calls import matmul_call, rotating_calls
from rigcheck.engine.stages.matmul.reference import judged

STAGE = "matmul"
M_VALUES = (1024, 2048, 4096, 8192)
NK_VALUES = (4096, 6144, 8192, 12288, 16384)
FINALISTS = 6
COOL_DOWN_S = 1.0


def shapes() -> list[tuple[int, int, int]]:
    return list(itertools.product(M_VALUES, NK_VALUES, NK_VALUES))


def burst(
    dtype: str, shape: tuple[int, int, int], device: torch.device, groups: int
) -> tuple[list[float], TimingStats]:
    """TFLOP/s of each of `groups` timed groups of calls, timed as the sweep times them, and the timings."""
    m, n, k = shape
    calls = rotating_calls(dtype, m, n, k, device, matmul_call(dtype, m, n, k, device))
    stats = time_grouped(calls, device, groups=groups)
    return [2.0 * m * n * k / t / 1e12 for t in stats.times], stats


def max_find(context: StageContext, device: torch.device, budget_s: float, dtype: str = "bf16") -> Iterator[Event]:
    label = str(device)
    candidates = shapes()
    started = time.monotonic()
    scored: list[tuple[float, tuple[int, int, int]]] = []
    for index, shape in enumerate(candidates):
        if context.cancelled or time.monotonic() - started > budget_s * 0.6:
            break
        yield Progress(STAGE, index, len(candidates), f"max-find {dtype} {'x'.join(map(str, shape))}")
        rates, stats = burst(dtype, shape, device, 10)
        if stats.disagreement() is None:  # a broken timer must not pick the finalists
            scored.append((max(rates), shape))
    torch.cuda.empty_cache()
    best: Measurement | None = None
    device_name = torch.cuda.get_device_name(device)
    peak, source = matmul_peak(device_name, dtype)
    limit = gpu_matmul_limit(device, dtype)
    for _, shape in sorted(scored, reverse=True)[:FINALISTS]:
        if context.cancelled or time.monotonic() - started > budget_s * 0.95:
            break
        time.sleep(COOL_DOWN_S)
        start = time.time()
        rates, stats = burst(dtype, shape, device, 30)
        mean, top = statistics.fmean(rates), max(rates)
        measurement = Measurement(
            STAGE,
            f"max-find {dtype} {'x'.join(map(str, shape))}",
            mean,
            "TFLOP/s",
            statistics.pstdev(rates),
            len(rates),
            label,
            {
                "dtype": dtype,
                "m": shape[0],
                "n": shape[1],
                "k": shape[2],
                "best": top,
                "mean": mean,
                "peak": peak,
                "peak_source": source,
                "share_of_peak": top / peak if peak else None,
                "searched_shapes": len(scored),
                "library": "torch",
                "bound": "compute",
                "benchmark_version": BENCHMARK_VERSION,
            }
            | device_identity(device),
            t_start=start,
        )
        # the best group is quoted too, so it must be possible as well as the mean
        top_impossible = over_limit(top, "TFLOP/s", limit.value, f"{limit.basis}; the best group") if limit else None
        for event in checked(measurement, stats, limit, top_impossible):
            yield event
            if isinstance(event, Measurement):
                measurement = event
        # the mean of 30 groups is the figure; their spread is reported as its own, not as noise
        if usable(measurement) and (best is None or top > best.params["best"]):
            best = measurement
    elapsed = time.monotonic() - started
    if best is None:
        yield Verdict(STAGE, "max-find", Status.SKIP, "no shape was measured", device=label)
        return
    share = f", {best.params['share_of_peak']:.0%} of the datasheet's {peak:g}" if peak else ""
    # the mean is judged: the published MAMF is a mean of iterations at the best shape, too
    found = lookup(device_name, f"max-find {dtype}", props_of(best.params), context.spec.option("baseline"))
    reference = None if isinstance(found, str) else found  # its model's, else its architecture's share (issue 40)
    status, cited, ending, against = judged(best.value, reference, device_name, best.name)
    yield Verdict(
        STAGE,
        "max-find",
        status,
        f"max achievable {dtype} on {label}: {best.value:.4g} TFLOP/s mean{cited}, {best.params['best']:.4g} best, "
        f"at {best.name.split()[-1]}{share}; {len(scored)} shapes searched in {elapsed:.0f} s{ending}",
        {"best": best.params["best"], "mean": best.value, "shape": best.name, "seconds": elapsed, "dtype": dtype}
        | against,
        device=label,
    )
