"""Max-find, in the spirit of mamf-finder: search bf16 shapes for the highest achievable matmul rate."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import torch

from ..events import Event, Measurement, Progress, Status, Verdict
from ..stage import StageContext
from .peaks import matmul_peak
from .timing import BENCHMARK_VERSION, time_calls

STAGE = "matmul"
M_VALUES = (1024, 2048, 4096, 8192)
NK_VALUES = (4096, 8192, 12288, 16384)
FINALISTS = 4


def max_find(context: StageContext, device: torch.device, budget_s: float, dtype: str = "bf16") -> Iterator[Event]:
    from .matmul import matmul_call

    label = str(device)
    shapes = list(itertools.product(M_VALUES, NK_VALUES, NK_VALUES))
    started = time.monotonic()
    scored: list[tuple[float, tuple[int, int, int]]] = []
    for index, (m, n, k) in enumerate(shapes):
        if context.cancelled or time.monotonic() - started > budget_s * 0.7:
            break
        yield Progress(STAGE, index, len(shapes), f"max-find {dtype} {m}x{n}x{k}")
        stats = time_calls(matmul_call(dtype, m, n, k, device), device, min_reps=5, min_seconds=0.0, max_reps=5)
        scored.append((2.0 * m * n * k / stats.median / 1e12, (m, n, k)))
        torch.cuda.empty_cache()
    finalists = [shape for _, shape in sorted(scored, reverse=True)[:FINALISTS]]
    best: Measurement | None = None
    for m, n, k in finalists:
        start = time.time()
        stats = time_calls(matmul_call(dtype, m, n, k, device), device, min_reps=50, min_seconds=0.5)
        median, top, spread = (v / 1e12 for v in stats.rate(2.0 * m * n * k))
        peak, source = matmul_peak(torch.cuda.get_device_name(device), dtype)
        measurement = Measurement(
            STAGE,
            f"max-find {dtype} {m}x{n}x{k}",
            median,
            "TFLOP/s",
            spread,
            len(stats.times),
            label,
            {
                "dtype": dtype,
                "m": m,
                "n": n,
                "k": k,
                "best": top,
                "peak": peak,
                "peak_source": source,
                "share_of_peak": median / peak if peak else None,
                "searched_shapes": len(scored),
                "library": "torch",
                "noisy": stats.noisy,
                "benchmark_version": BENCHMARK_VERSION,
            },
            t_start=start,
        )
        yield measurement
        if best is None or measurement.params["best"] > best.params["best"]:
            best = measurement
    elapsed = time.monotonic() - started
    if best is None:
        yield Verdict(STAGE, "max-find", Status.SKIP, "no shape was measured", device=label)
        return
    yield Verdict(
        STAGE,
        "max-find",
        Status.PASS,
        f"max achievable {dtype} on {label}: {best.params['best']:.4g} TFLOP/s best, {best.value:.4g} median, "
        f"at {best.name.split()[-1]} after searching {len(scored)} shapes in {elapsed:.0f} s",
        {"best": best.params["best"], "median": best.value, "shape": best.name, "seconds": elapsed},
        device=label,
    )
