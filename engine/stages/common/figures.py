"""Every figure passes two checks before it is reported: its two clocks agree, and it is within its
device's physical limit. A figure that fails either is a broken measurement: it is still stored, for
diagnosis, but marked broken with its likely cause and the next step, left out of every best-of
summary, and the stage gets a FAIL.

Clocks that disagree mean a broken timer. Clocks that agree on a figure over its limit mean the work
was not what was asked: a math-mode override or flag, a dtype that ran as another, or a wrong count.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

import torch
from rigcheck.engine.events import Event, Measurement, Status, Verdict
from rigcheck.engine.measure.plausibility import (
    Cause,
    Limit,
    MathMode,
    excess_cause,
    is_over_limit,
    over_limit,
    timer_cause,
)
from rigcheck.engine.measure.stats import LAUNCH_BOUND_S, TimingStats
from rigcheck.engine.stages.common import span_clocks
from rigcheck.engine.stages.common.device_facts import device_facts
from rigcheck.engine.stages.common.limits import bus_id, gpu_matmul_limit

# What an fp32 matrix multiply can run as without being asked, in the order tried: TF32, then bf16.
FP32_RUNS_AS = ("tf32", "bf16")


def device_identity(device: torch.device) -> dict[str, object]:
    """PCI bus id and UUID, so the parent pairs a figure with its GPU's telemetry whatever the device order."""
    if device.type != "cuda":
        return {}
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    identity = {"pci_bus_id": bus_id(device), "gpu_uuid": str(uuid) if uuid is not None else None}
    return identity | device_facts(device)  # its SMs, clocks and bus width: the parent derives its peaks (issue 40)


def timing_params(stats: TimingStats) -> dict[str, object]:
    return {
        "timer": stats.primary,
        "timer_check": stats.check,
        "median_s": stats.median,
        "check_median_s": sorted(stats.check_times)[len(stats.check_times) // 2] if stats.check_times else None,
        "spread_rel": stats.spread,
        "check_stepped": stats.check_stepped(),
        "noisy": stats.noisy,
        "launch_bound": stats.primary == "events" and stats.median < LAUNCH_BOUND_S,
        "span_clocks": span_clocks.of(stats),
    }


def checked(
    measurement: Measurement, stats: TimingStats | None, limit: Limit | None, known_broken: str | None = None
) -> Iterator[Event]:
    """The measurement with its limit and checks in its params, then a FAIL verdict if it is broken
    (`known_broken`: a reason the caller found itself, such as clocks it compared on its own, or a
    part of the figure over its limit)."""
    params = dict(measurement.params)
    params.update(limit.as_params() if limit else {"limit": None, "limit_basis": "no limit known for this device"})
    if stats is not None:
        params.update(timing_params(stats))
    caller_impossible = known_broken if is_over_limit(known_broken) else None
    clocks = (None if caller_impossible else known_broken) or (stats.disagreement() if stats is not None else None)
    impossible = caller_impossible or over_limit(
        measurement.value, measurement.unit, params["limit"], str(params["limit_basis"])
    )
    cause: Cause | None = None
    if clocks:
        cause = timer_cause(clocks, impossible)
    elif impossible:
        cause = _work_cause(measurement, impossible, params["limit"], stats)
    params["broken"] = cause.text if cause else None
    params["broken_next"] = cause.next_step if cause else None
    where = measurement.device or "?"
    yield replace(measurement, params=params)
    if cause:
        yield Verdict(
            measurement.stage,
            f"figure {measurement.name}",
            Status.FAIL,
            f"{measurement.name} on {where}: {cause.text}; the figure is not a result; next: {cause.next_step}",
            {
                "value": measurement.value,
                "unit": measurement.unit,
                "limit": params["limit"],
                "figure": measurement.name,
            },
            device=where,
        )


def _work_cause(measurement: Measurement, impossible: str, limit: float | None, stats: TimingStats | None) -> Cause:
    """A figure over its limit whose clocks agree (or that has no second clock): what the work was instead."""
    dtype = measurement.params.get("dtype")
    found = excess_cause(
        str(dtype) if dtype else None,
        measurement.value,
        float(limit or 0.0),
        math_mode(),
        faster_limits(measurement),
        uses_cudnn=measurement.stage != "matmul",
    )
    if stats is not None and stats.check_times:
        clocks = f"{stats.primary} and {stats.check}"
        lead = f"{impossible}, and its two clocks agree ({clocks}): the work was not what was asked"
    else:
        lead = f"{impossible}, with no second clock to tell a broken timer from work other than what was asked"
    return Cause(f"{lead}: {found.text}", found.next_step)


def _read(getter: Callable[[], Any]) -> Any:
    """A value torch may not give here, or None: a flag an older or newer release renamed, a GPU's limit."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # newer torch deprecates allow_tf32 in favour of fp32_precision
            return getter()
    except Exception:
        return None


def math_mode() -> MathMode:
    """The environment and torch's math flags as they are now, in the child that took the figure."""
    matmul = torch.backends.cuda.matmul
    return MathMode(
        env=dict(os.environ),
        allow_tf32=_read(lambda: bool(matmul.allow_tf32)),
        float32_precision=_read(torch.get_float32_matmul_precision),
        cudnn_allow_tf32=_read(lambda: bool(torch.backends.cudnn.allow_tf32)),
        fp16_reduced_reduction=_read(lambda: bool(matmul.allow_fp16_reduced_precision_reduction)),
        bf16_reduced_reduction=_read(lambda: bool(matmul.allow_bf16_reduced_precision_reduction)),
    )


def faster_limits(measurement: Measurement) -> dict[str, float]:
    """The limits of the dtypes an fp32 matrix multiply on a GPU can silently run as."""
    where = measurement.device or ""
    if measurement.params.get("dtype") != "fp32" or not where.startswith("cuda"):
        return {}
    found: dict[str, float] = {}

    def limit_of(dtype: str) -> Any:
        return _read(lambda: gpu_matmul_limit(torch.device(where), dtype))

    for dtype in FP32_RUNS_AS:
        limit = limit_of(dtype)
        if limit is not None:
            found[dtype] = limit.value
    return found


def usable(measurement: Measurement) -> bool:
    """A figure that may stand in a summary: not broken by either check."""
    return not measurement.params.get("broken")
