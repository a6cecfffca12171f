"""Every figure passes two checks before it is reported: its two clocks agree, and it is within its
device's physical limit. A figure that fails either is a broken measurement: it is still stored, for
diagnosis, but marked broken, left out of every best-of summary, and the stage gets a FAIL."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import torch
from rigcheck.engine.events import Event, Measurement, Status, Verdict
from rigcheck.engine.measure.plausibility import Limit, over_limit
from rigcheck.engine.measure.stats import LAUNCH_BOUND_S, TimingStats
from rigcheck.engine.stages.common.limits import bus_id


def device_identity(device: torch.device) -> dict[str, object]:
    """PCI bus id and UUID, so the parent pairs a figure with its GPU's telemetry whatever the device order."""
    if device.type != "cuda":
        return {}
    uuid = getattr(torch.cuda.get_device_properties(device), "uuid", None)
    return {"pci_bus_id": bus_id(device), "gpu_uuid": str(uuid) if uuid is not None else None}


def timing_params(stats: TimingStats) -> dict[str, object]:
    return {
        "timer": stats.primary,
        "timer_check": stats.check,
        "median_s": stats.median,
        "check_median_s": sorted(stats.check_times)[len(stats.check_times) // 2] if stats.check_times else None,
        "spread_rel": stats.spread,
        "noisy": stats.noisy,
        "launch_bound": stats.primary == "events" and stats.median < LAUNCH_BOUND_S,
    }


def checked(
    measurement: Measurement, stats: TimingStats | None, limit: Limit | None, known_broken: str | None = None
) -> Iterator[Event]:
    """The measurement with its limit and checks in its params, then a FAIL verdict if it is broken
    (`known_broken`: a reason the caller found itself, such as clocks it compared on its own)."""
    timer_reason = known_broken or (stats.disagreement() if stats is not None else None)
    params = dict(measurement.params)
    params.update(limit.as_params() if limit else {"limit": None, "limit_basis": "no limit known for this device"})
    if stats is not None:
        params.update(timing_params(stats))
    impossible = over_limit(measurement.value, measurement.unit, params["limit"], str(params["limit_basis"]))
    broken = timer_reason or impossible
    params["broken"] = broken
    where = measurement.device or "?"
    yield replace(measurement, params=params)
    if broken:
        yield Verdict(
            measurement.stage,
            f"figure {measurement.name}",
            Status.FAIL,
            f"{measurement.name} on {where}: {broken}; the figure is not a result",
            {"value": measurement.value, "unit": measurement.unit, "limit": params["limit"]},
            device=where,
        )


def usable(measurement: Measurement) -> bool:
    """A figure that may stand in a summary: not broken by either check."""
    return not measurement.params.get("broken")
