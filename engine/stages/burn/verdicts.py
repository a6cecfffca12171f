"""The burn's verdicts: wrong elements, throughput that falls over time (with its likely cause), slow peers.
Each verdict that is not a PASS names its likely cause and the next thing to run or change."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.hw.throttle import POWER_FAULTS, THERMAL_REASONS, of_class
from rigcheck.engine.stages.burn.loop import Interval, Started
from rigcheck.engine.telemetry.power_limit import power_limit_state

POWER_CAP_REASONS = of_class("power cap")

STAGE = "burn"
FALL_LIMIT = 0.10  # the last minute this much below the first is a fault
PEER_LIMIT = 0.10  # a GPU this much below the best of its model is slow
WINDOW_S = 60.0
Conditions = Callable[[str, float, float], dict[str, Any]]


def smi(device: str, vendor: str | None, nvidia: str, amd: str) -> str:
    """The vendor's command for a next step, both where the vendor is not known."""
    if not device.startswith("cuda"):
        return ""
    if vendor == "AMD":
        return f"`{amd}`"
    return f"`{nvidia}`" if vendor == "NVIDIA" else f"`{nvidia}` (AMD: `{amd}`)"


def faulty_next(device: str, vendor: str | None, memory: bool = False) -> str:
    """What to run after wrong results: the device's own error counters, and verify."""
    if not device.startswith("cuda"):
        return "next: test the memory (memtest86+) and check the CPU's cooling; wrong results are faulty hardware"
    counters = smi(device, vendor, "nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT", "rocm-smi --showrasinfo all")
    then = "" if memory else f" and `rigcheck run verify --device {device}`"
    return f"next: {counters}{then}; wrong results are faulty hardware"


def error_next(device: str) -> str:
    """What to run after a device stopped with an error mid-burn."""
    if not device.startswith("cuda"):
        return "next: the stage's log (`rigcheck show last`) and the kernel log (`sudo dmesg`)"
    return f"next: the kernel log (`sudo dmesg | grep -iE 'xid|amdgpu'`) and `rigcheck run health --device {device}`"


def correctness(device: str, intervals: list[Interval], check_every: int, vendor: str | None = None) -> Verdict:
    wrong = [w for i in intervals for w in i.wrong]
    copy_wrong = [w for i in intervals for w in i.copy_wrong]
    checks = sum(i.checks for i in intervals)
    iterations = sum(i.iterations for i in intervals)
    numbers = {
        "checks": checks,
        "iterations": iterations,
        "check_every": check_every,
        "wrong_checks": len(wrong),
        "wrong_elements": sum(n for _, n in wrong),
        "first_wrong_iteration": wrong[0][0] if wrong else None,
        "copy_wrong_checks": len(copy_wrong),
        "copy_wrong_words": sum(n for _, n in copy_wrong),
    }
    if wrong:
        at, count = wrong[0]
        more = (
            f"; {len(wrong)} of {checks} checks wrong, {numbers['wrong_elements']} elements in all"
            if len(wrong) > 1
            else ""
        )
        text = (
            f"{device} returned {count} wrong element(s) at iteration {at} (each result compared with the first){more}"
            f"; {faulty_next(device, vendor)}"
        )
        return Verdict(STAGE, "correctness", Status.FAIL, text, numbers, device=device)
    if copy_wrong:
        at, count = copy_wrong[0]
        text = (
            f"{device} memory copy came back with {count} wrong word(s) after iteration {at}: its memory corrupts data"
            f"; {faulty_next(device, vendor, memory=True)}"
        )
        return Verdict(STAGE, "correctness", Status.FAIL, text, numbers, device=device)
    if not checks:
        return Verdict(
            STAGE, "correctness", Status.SKIP, f"{device} was stopped before its first check", numbers, device=device
        )
    copies = ", and every memory copy came back intact" if any(i.copy_gb_s for i in intervals) else ""
    text = f"{device}: {checks} checks over {iterations} iterations, every result bit-identical with the first{copies}"
    return Verdict(STAGE, "correctness", Status.PASS, text, numbers, device=device)


def windows(intervals: list[Interval]) -> tuple[list[Interval], list[Interval], float] | None:
    """The first and last minute (or half of a run under two minutes) of intervals, and the window's length."""
    if len(intervals) < 4:
        return None
    start, end = intervals[0].t_start, intervals[-1].t_end
    span = min(WINDOW_S, (end - start) / 2)
    first = [i for i in intervals if i.t_end <= start + span] or intervals[:1]
    last = [i for i in intervals if i.t_start >= end - span] or intervals[-1:]
    return first, last, span


def likely_cause(first: dict[str, Any], last: dict[str, Any]) -> str:
    """The cause of a fall in throughput, in words, from the conditions of the two windows, and the next
    thing to run or change."""
    if not first or not last:
        return (
            "no clock telemetry in the stage on this device, so the cause is unknown; "
            "next: `rigcheck monitor` beside a rerun shows the clocks and other work"
        )
    reasons = set(last.get("throttle") or [])
    clock0, clock1 = first.get("sm_clock_mean_mhz"), last.get("sm_clock_mean_mhz")
    vendor = last.get("vendor")
    parts = []
    if clock0 and clock1:
        parts.append(f"SM clock {clock0:.0f} -> {clock1:.0f} MHz")
    if first.get("temperature_max_c") is not None and last.get("temperature_max_c") is not None:
        parts.append(f"temperature {first['temperature_max_c']:.0f} -> {last['temperature_max_c']:.0f} C")
    if last.get("power_mean_w") is not None:
        limit = f" of {last['power_limit_w']:.0f} W" if last.get("power_limit_w") else ""
        parts.append(f"power {last['power_mean_w']:.0f} W{limit}")
    seen = ", ".join(parts)
    if reasons & THERMAL_REASONS:
        cause = "thermal slowdown"
        step = smi("cuda", vendor, "nvidia-smi -q -d PERFORMANCE,TEMPERATURE", "rocm-smi --showtemp --showperflevel")
        step += "; check the fans, the airflow and the inlet temperature"
    elif reasons & POWER_FAULTS:
        cause = "a hardware slowdown signal" + (" (power brake)" if "power brake" in reasons else "")
        step = smi("cuda", vendor, "nvidia-smi -q -d PERFORMANCE", "rocm-smi --showperflevel")
        step += "; it comes from the board or the chassis (power supply, BMC)"
    elif reasons & POWER_CAP_REASONS:
        cause, step = _power_cap(last)
    elif clock0 and clock1 and clock1 < clock0 * 0.97:
        cause = "a falling clock with no reason reported"
        step = smi("cuda", vendor, "nvidia-smi -q -d PERFORMANCE,CLOCK", "rocm-smi --showperflevel --showclocks")
    else:
        cause = "not the clock, which held: look for other work on the device or the host"
        step = smi("cuda", vendor, "nvidia-smi", "rocm-smi --showpids") + " for the device, `top` for the host"
    return (f"{cause} ({seen})" if seen else cause) + f"; next: {step}"


def _power_cap(last: dict[str, Any]) -> tuple[str, str]:
    """The power cap as a cause: a lowered limit is the cause to undo; at the default it is how the board runs."""
    limit, default = last.get("power_limit_w"), last.get("power_default_limit_w")
    state = power_limit_state(limit, default, last.get("power_max_limit_w"))
    if state == "lowered":
        cause = f"the power cap, at a limit lowered to {limit:.0f} W below the board's default {default:.0f} W"
        return cause, f"`sudo nvidia-smi -pl {default:.0f}` restores the default"
    if state == "default":
        cause = "the power cap at the board's default limit: a hotter board holds a lower clock for the same power"
        return cause, "`nvidia-smi -q -d POWER,TEMPERATURE`; check the cooling"
    return "the power cap (the board's default limit is unknown)", "`nvidia-smi -q -d POWER` shows the limits"


def rate_text(value: float) -> str:
    """A rate as a person reads it: 4 significant digits, and whole thousands with commas (never '7e+05')."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def rate_unit(device: str) -> tuple[float, str]:
    """(scale from TFLOP/s, unit) as matmul reports its figures: TFLOP/s on a GPU, GFLOP/s on the CPU."""
    return (1.0, "TFLOP/s") if device.startswith(("cuda", "hip")) else (1000.0, "GFLOP/s")


def over_time(device: str, intervals: list[Interval], conditions: Conditions) -> Verdict:
    found = windows(intervals)
    if found is None:
        text = (
            f"{device}: too few intervals ({len(intervals)}) to compare the start of the burn with its end; "
            "next: a longer `--duration`"
        )
        return Verdict(STAGE, "over-time", Status.SKIP, text, {"intervals": len(intervals)}, device=device)
    first, last, span = found
    early = statistics.median(i.tflops for i in first)
    late = statistics.median(i.tflops for i in last)
    change = late / early - 1 if early else 0.0
    window = "minute" if span >= WINDOW_S else f"{span:.0f} s"
    numbers: dict[str, Any] = {
        "first_tflops": round(early, 4),
        "last_tflops": round(late, 4),
        "change": round(change, 4),
        "window_s": round(span, 1),
        "first_conditions": conditions(device, first[0].t_start, first[-1].t_end),
        "last_conditions": conditions(device, last[0].t_start, last[-1].t_end),
    }
    scale, unit = rate_unit(device)
    figures = f"first {window} {rate_text(early * scale)}, last {window} {rate_text(late * scale)} {unit}"
    if change < -FALL_LIMIT:
        cause = likely_cause(numbers["first_conditions"], numbers["last_conditions"])
        text = f"{device} throughput fell {-change:.0%} over the burn ({figures}): {cause}"
        return Verdict(STAGE, "over-time", Status.WARN, text, numbers, tolerance=FALL_LIMIT, device=device)
    text = f"{device} throughput held over the burn ({figures}, {change:+.0%})"
    return Verdict(STAGE, "over-time", Status.PASS, text, numbers, tolerance=FALL_LIMIT, device=device)


def peers(started: dict[str, Started], sustained: dict[str, float], vendor: str | None = None) -> Iterator[Verdict]:
    """Each GPU against the best of the same model doing the same work; one GPU has no peer."""
    groups: dict[tuple[str, int, str], list[str]] = {}
    for device, info in started.items():
        if device in sustained:
            groups.setdefault((info.name, info.n, info.dtype), []).append(device)
    for (name, _, _), devices in groups.items():
        if len(devices) < 2:
            text = f"{devices[0]}: no other {name} in this burn to compare with"
            yield Verdict(STAGE, "peers", Status.SKIP, text, {"value": sustained[devices[0]]}, device=devices[0])
            continue
        best = max(devices, key=lambda d: sustained[d])
        for device in devices:
            share = sustained[device] / sustained[best]
            numbers = {
                "value": sustained[device],
                "best": sustained[best],
                "best_device": best,
                "share": round(share, 4),
            }
            if share < 1 - PEER_LIMIT:
                text = (
                    f"{device} sustained {sustained[device]:.4g} {rate_unit(device)[1]}, {1 - share:.0%} below {best} "
                    f"({sustained[best]:.4g}), the best of {len(devices)} {name}; next: "
                    + smi(device, vendor, "nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE", "rocm-smi")
                    + " on both: clocks, power limit and throttle reasons tell them apart"
                )
                yield Verdict(STAGE, "peers", Status.WARN, text, numbers, tolerance=PEER_LIMIT, device=device)
            else:
                text = (
                    f"{device} sustained {sustained[device]:.4g} {rate_unit(device)[1]}, {share:.0%} of the best of "
                    f"{len(devices)} {name}"
                )
                yield Verdict(STAGE, "peers", Status.PASS, text, numbers, tolerance=PEER_LIMIT, device=device)


def agreement(started: dict[str, Started]) -> Iterator[Verdict]:
    """GPUs of one model doing the same product must agree bit for bit; the odd ones out are named."""
    groups: dict[tuple[str, int, str], list[str]] = {}
    for device, info in started.items():
        groups.setdefault((info.name, info.n, info.dtype), []).append(device)
    for (name, _, _), devices in groups.items():
        if len(devices) < 2:
            continue
        votes = Counter(started[d].digest for d in devices)
        common, count = votes.most_common(1)[0]
        odd = [d for d in devices if started[d].digest != common]
        numbers = {"devices": devices, "differing": odd}
        if not odd:
            text = f"the first results of {', '.join(devices)} ({name}) are bit-identical"
            yield Verdict(STAGE, "agreement", Status.PASS, text, numbers)
        elif count == 1 or count * 2 == len(devices):
            text = (
                f"{', '.join(devices)} ({name}) disagree about the same product: at least one computes wrong; "
                "next: `rigcheck run verify` on each"
            )
            yield Verdict(STAGE, "agreement", Status.WARN, text, numbers)
        else:
            for device in odd:
                text = (
                    f"{device}'s first result differs from {count} of its {len(devices) - 1} peers ({name}) "
                    f"on the same product; next: `rigcheck run verify --device {device}`"
                )
                yield Verdict(STAGE, "agreement", Status.WARN, text, numbers, device=device)
