"""The conditions a figure was measured under (clocks, heat, power, host load) and if to trust it.

The judgement is TRUSTED, or SUSPECT with its reasons in words.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from .events import Measurement
from .telemetry.sample import GpuSample, Sample

SUSPECT_REASONS = {
    "power cap",
    "hardware slowdown",
    "software thermal slowdown",
    "hardware thermal slowdown",
    "power brake",
}


@dataclass(frozen=True)
class TrustPolicy:
    others_share_max: float = 0.25  # other processes may keep a quarter of the CPUs busy
    others_cpus_floor: float = 1.0  # ...and always at least one CPU's worth
    clock_ratio_min: float = 0.85
    spread_max: float = 0.05  # interquartile range over median

    def others_limit(self, cpus: int) -> float:
        return max(self.others_cpus_floor, self.others_share_max * cpus)


def nvml_index(device: str, environ: dict[str, str] | None = None) -> int | None:
    """The telemetry index of torch's cuda:N, following a numeric CUDA/HIP_VISIBLE_DEVICES."""
    if not device.startswith("cuda"):
        return None
    ordinal = int(device.split(":")[1]) if ":" in device else 0
    env = os.environ if environ is None else environ
    visible = env.get("CUDA_VISIBLE_DEVICES") or env.get("HIP_VISIBLE_DEVICES")
    if visible:
        ids = [part.strip() for part in visible.split(",")]
        if ordinal < len(ids) and ids[ordinal].isdigit():
            return int(ids[ordinal])
    return ordinal


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def summarise(samples: list[Sample], gpu_index: int | None) -> dict[str, Any]:
    """Reduce the samples inside a measurement's window to a few numbers."""
    if not samples:
        return {}
    hosts = [s.host for s in samples]
    own_pids = {pid for h in hosts for pid in h.own_pids}
    out: dict[str, Any] = {
        "samples": len(samples),
        "window_s": round(samples[-1].t - samples[0].t, 3),
        "host_cpus": hosts[0].cpus,
        "host_others_cpus": round(statistics.fmean(h.others_cpus for h in hosts), 2),
        "host_own_cpus": round(statistics.fmean(h.own_cpus for h in hosts), 2),
        "host_load1": max((h.load1 for h in hosts if h.load1 is not None), default=None),
    }
    gpus: list[GpuSample] = [g for s in samples for g in s.gpus if g.index == gpu_index]
    if gpus:
        clocks = [g.sm_clock_mhz for g in gpus if g.sm_clock_mhz is not None]
        top = gpus[0].max_sm_clock_mhz
        mean_clock = _mean(clocks)
        out.update(
            gpu_name=gpus[0].name,
            sm_clock_mean_mhz=None if mean_clock is None else round(mean_clock, 1),
            sm_clock_min_mhz=min(clocks) if clocks else None,
            sm_clock_max_mhz=top,
            clock_ratio=round(mean_clock / top, 3) if mean_clock and top else None,
            temperature_max_c=max((g.temperature_c for g in gpus if g.temperature_c is not None), default=None),
            power_mean_w=_mean(g.power_w for g in gpus),
            power_limit_w=gpus[0].power_limit_w,
            utilization_mean_pct=_mean(g.utilization_pct for g in gpus),
            throttle=sorted({r for g in gpus for r in g.throttle}),
            other_gpu_pids=sorted({p for g in gpus for p in g.process_pids} - own_pids),
        )
    return out


def judge(
    conditions: dict[str, Any], value: float, spread: float | None, policy: TrustPolicy | None = None
) -> tuple[str, list[str]]:
    """TRUSTED, or SUSPECT with its reasons in words."""
    policy = policy or DEFAULT_POLICY
    reasons = []
    cpus = conditions.get("host_cpus")
    others = conditions.get("host_others_cpus")
    if cpus and others is not None and others > policy.others_limit(cpus):
        reasons.append(f"other processes kept {others:.1f} of {cpus} CPUs busy")
    throttle = [r for r in conditions.get("throttle", []) if r in SUSPECT_REASONS]
    ratio = conditions.get("clock_ratio")
    idle = "idle" in conditions.get("throttle", [])
    if ratio is not None and ratio < policy.clock_ratio_min and not idle:
        cause = ", ".join(throttle) or "no reason reported"
        reasons.append(f"SM clock at {ratio:.0%} of max: {cause}")
    elif throttle:
        reasons.append(f"clocks held back by {', '.join(throttle)}")
    if conditions.get("other_gpu_pids"):
        pids = conditions["other_gpu_pids"]
        reasons.append(f"{len(pids)} other process(es) on the GPU (pids {', '.join(map(str, pids[:5]))})")
    if spread is not None and value and spread / abs(value) > policy.spread_max:
        reasons.append(f"timing spread {spread / abs(value):.0%} of the median")
    return ("SUSPECT" if reasons else "TRUSTED"), reasons


DEFAULT_POLICY = TrustPolicy()


class ConditionsAnnotator:
    """Fills a measurement's conditions and trust verdict from the sampler's ring buffer."""

    def __init__(self, sampler: Any, policy: TrustPolicy = DEFAULT_POLICY) -> None:
        self.sampler = sampler
        self.policy = policy
        self.settle_s = sampler.interval * 1.2

    def __call__(self, measurement: Measurement) -> Measurement:
        end = measurement.t
        if time.time() < end + self.settle_s:
            time.sleep(max(0.0, end + self.settle_s - time.time()))  # let the closing sample land
        start = measurement.t_start if measurement.t_start is not None else end
        samples = self.sampler.window(start, end)
        conditions = summarise(samples, nvml_index(measurement.device))
        if not conditions:
            return measurement
        trust, reasons = judge(conditions, measurement.value, measurement.spread, self.policy)
        conditions.update(trust=trust, trust_reasons=reasons)
        return replace(measurement, conditions=conditions)
