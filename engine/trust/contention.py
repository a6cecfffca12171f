"""The contention report across a run: GPU clock by host-load band (the load on the CPUs rigcheck may use,
where fewer than the host's), and each figure against its clock."""

from __future__ import annotations

import statistics
from typing import Any

from rigcheck.engine.trust.judgement import trust_word
from rigcheck.engine.trust.view import Conditions

BANDS = ((0.0, 0.10), (0.10, 0.25), (0.25, 0.50), (0.50, 1.01))
GPU_BUSY_PCT = 50.0


def others_share(host: dict[str, Any]) -> float:
    """Other processes' share of the CPUs rigcheck may use: its set where one narrows them, else the host's."""
    if host.get("set_cpus") and host.get("set_busy_cpus") is not None:
        return max(0.0, host["set_busy_cpus"] - host.get("own_cpus", 0.0)) / host["set_cpus"]
    return host["others_cpus"] / max(1, host["cpus"])


def clock_by_load_band(samples: list[dict[str, Any]], gpu_index: int = 0) -> list[dict[str, Any]]:
    """Mean and lowest SM clock while the GPU was busy, for each band of host load by other processes."""
    rows = []
    for low, high in BANDS:
        clocks = []
        for sample in samples:
            share = others_share(sample["host"])
            if not low <= share < high:
                continue
            for gpu in sample["gpus"]:
                busy = (gpu.get("utilization_pct") or 0) >= GPU_BUSY_PCT
                if gpu["index"] == gpu_index and busy and gpu.get("sm_clock_mhz") is not None:
                    clocks.append(gpu["sm_clock_mhz"])
        rows.append(
            {
                "others_share": f"{low:.0%}-{min(high, 1.0):.0%}",
                "samples": len(clocks),
                "sm_clock_mean_mhz": round(statistics.fmean(clocks), 1) if clocks else None,
                "sm_clock_min_mhz": min(clocks) if clocks else None,
            }
        )
    return rows


def rate_against_clock(measurements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    rows = []
    for m in measurements:
        conditions = m.get("conditions") or {}
        clock = Conditions.from_dict(conditions).sm_clock_mean_mhz
        if clock is None:
            continue
        rows.append(
            {
                "name": m["name"],
                "value": m["value"],
                "unit": m["unit"],
                "sm_clock_mean_mhz": clock,
                "host_others_cpus": conditions.get("host_others_cpus"),
                "trust": trust_word(conditions),
            }
        )
    return rows


def contention_report(samples: list[dict[str, Any]], measurements: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "clock_by_host_load": clock_by_load_band(samples),
        "rate_vs_clock": rate_against_clock(measurements),
    }
