"""A GPU figure judged on its clocks and power: SUSPECT only when the clock is low for a reason outside the load."""

from __future__ import annotations

import statistics
from typing import Any

from rigcheck.engine.hw.throttle import POWER_CAP, THERMAL_REASONS, of_class
from rigcheck.engine.telemetry.power_limit import power_limit_state as limit_state
from rigcheck.engine.trust.policy import DEFAULT_POLICY, TrustPolicy

POWER_CAP_REASONS = of_class(POWER_CAP)

GPU_BUSY_PCT = 50.0


def _smi(conditions: dict[str, Any], nvidia: str, amd: str) -> str:
    """The vendor's command for the next step."""
    return amd if str(conditions.get("gpu_vendor") or "").upper() == "AMD" else nvidia


def _slowdown_next(conditions: dict[str, Any], slowdowns: list[str]) -> str:
    if THERMAL_REASONS & set(slowdowns):
        command = _smi(conditions, "nvidia-smi -q -d PERFORMANCE,TEMPERATURE", "rocm-smi --showtemp --showperflevel")
        return f"`{command}`; check the fans, the airflow and the inlet temperature"
    command = _smi(conditions, "nvidia-smi -q -d PERFORMANCE", "rocm-smi --showperflevel")
    return f"`{command}`; a hardware slowdown or power brake comes from the board or the chassis (power supply, BMC)"


def power_limit_state(conditions: dict[str, Any], policy: TrustPolicy = DEFAULT_POLICY) -> str:
    """ "default", "lowered" or "unknown": the enforced power limit against the board's default and maximum."""
    return limit_state(
        conditions.get("power_limit_w"),
        conditions.get("power_default_limit_w"),
        conditions.get("power_max_limit_w"),
        policy.power_limit_slack,
    )


def _judge_clocks(
    conditions: dict[str, Any],
    bound: str,
    policy: TrustPolicy,
    reference_clocks: list[float] | None,
    reasons: list[str],
    notes: list[str],
    device_timed: bool = False,
) -> None:
    """Clock and power: SUSPECT only when the clock is low for a reason outside the load itself. A GPU held
    at its power cap is the normal state of a heavy load when the limit is the board's default (an H200
    holds about 1,470 of 1,980 MHz on a bf16 8192 product at 700 W); a lowered limit is not."""
    ratio = conditions.get("clock_ratio")
    throttle = conditions.get("throttle", [])
    power, power_limit = conditions.get("power_mean_w"), conditions.get("power_limit_w")
    default = conditions.get("power_default_limit_w")
    capped = bool(POWER_CAP_REASONS & set(throttle))
    at = f"{power:.0f} of {power_limit:.0f} W" if power and power_limit else "its power limit"
    state = power_limit_state(conditions, policy)
    lowered = ""
    if state == "lowered":
        lowered = f"power limit lowered to {power_limit:.0f} W, below this board's default {default:.0f} W"
        notes.append(lowered)
    if bound != "compute" or ratio is None:
        if capped:
            notes.append(f"power-limited at {at}, which does not slow a {bound}-bound figure")
        mem_ratio = conditions.get("mem_clock_ratio")
        if bound == "memory" and mem_ratio is not None and mem_ratio < policy.mem_clock_ratio_min:
            command = _smi(conditions, "nvidia-smi -q -d CLOCK,PERFORMANCE", "rocm-smi --showclocks")
            reasons.append(f"memory clock at {mem_ratio:.0%} of max; next: `{command}`")
        return
    # NVML's utilization lags short bursts (an event-timed matmul read 15%): device-timed work is busy by construction
    busy = device_timed or (conditions.get("utilization_mean_pct") or 0.0) >= GPU_BUSY_PCT
    mean = conditions.get("sm_clock_mean_mhz")
    if reference_clocks and mean and busy:
        reference = statistics.median(reference_clocks)
        if mean < policy.reference_clock_min * reference:
            command = _smi(conditions, "nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE", "rocm-smi")
            reasons.append(
                f"SM clock {mean:,.0f} MHz, below the {reference:,.0f} MHz this GPU held for the same figure "
                f"in {len(reference_clocks)} earlier clean run(s); next: `{command}`, and `rigcheck compare` "
                "with the earlier run"
            )
            return
    if capped and ratio >= policy.power_capped_clock_min:
        notes.append(f"power-limited at {at} with the SM clock at {ratio:.0%} of max: normal for this load")
    elif capped and busy and state == "default" and ratio >= policy.power_capped_clock_floor:
        notes.append(
            f"power-limited at {power_limit:.0f} W, as this load is on this board "
            f"(SM clock at {ratio:.0%} of max, {at})"
        )
    elif capped and busy and state == "lowered":
        notes.remove(lowered)
        reasons.append(
            f"SM clock at {ratio:.0%} of max under a power limit lowered to {power_limit:.0f} W, below this "
            f"board's default {default:.0f} W ({at}); next: `sudo nvidia-smi -pl {default:.0f}` restores it"
        )
    elif capped and busy and state == "default":
        reasons.append(
            f"SM clock at {ratio:.0%} of max under the power cap at the board's default limit ({at}): far below "
            "what a power-limited board holds; next: `nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE`"
        )
    elif capped and busy:
        reasons.append(
            f"SM clock at {ratio:.0%} of max under the power cap ({at}), and the board's default power limit "
            "could not be read to rule out a lowered one; next: `nvidia-smi -q -d POWER`"
        )
    elif ratio < policy.clock_ratio_min and busy and conditions.get("idle_share", 0.0) < 0.5:
        cause = ", ".join(r for r in throttle if r != "idle") or "no reason reported"
        command = _smi(conditions, "nvidia-smi -q -d PERFORMANCE,CLOCK", "rocm-smi --showperflevel --showclocks")
        reasons.append(f"SM clock at {ratio:.0%} of max: {cause}; next: `{command}` (locked or application clocks?)")
