"""Burn: sustained matrix products on every asked-for device at once, for --duration seconds.

Each result is checked against the first (a healthy device repeats the same product bit for bit),
throughput is reported interval by interval so a cancelled burn keeps what it measured, and the
verdicts name wrong elements, throughput that falls over time and a GPU slower than its peers.
"""

from __future__ import annotations

import queue
import statistics
import threading
import time
from collections.abc import Iterator
from typing import Any

import torch
from rigcheck.engine.events import Event, LogLine, Measurement, Progress, Status, Verdict
from rigcheck.engine.stage import StageContext
from rigcheck.engine.stages.burn.loop import BurnSettings, DeviceBurn, Failed, Interval, Started
from rigcheck.engine.stages.burn.telemetry import ChildTelemetry
from rigcheck.engine.stages.burn.verdicts import (
    STAGE,
    agreement,
    correctness,
    error_next,
    over_time,
    peers,
    rate_unit,
)
from rigcheck.engine.stages.common.devices import by_profile, resolve_devices
from rigcheck.engine.stages.common.figures import device_identity

DURATION_S = {"quick": 30.0, "standard": 60.0, "full": 300.0}  # when --duration is not given
MEMORY_SHARE = 0.3  # of free GPU memory swept by copies in the full profile
DTYPE_WORDS = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "float64": "fp64"}


def duration_for(spec: Any) -> float:
    asked = spec.option("duration")
    return float(asked) if asked else DURATION_S.get(spec.profile, 60.0)


def settings_for(device: torch.device, profile: str, duration: float, fault: str) -> BurnSettings:
    """bf16 at 8192 where the GPU has it (fp32 otherwise); small fp32 products on the CPU."""
    interval = min(15.0, max(0.25, duration / 20))
    if device.type != "cuda":
        n = by_profile(profile, 256, 512, 1024)
        return BurnSettings(duration, interval, n, torch.float32, check_every=1, fault=fault)
    props = torch.cuda.get_device_properties(device)
    dtype = torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    n = 8192 if props.total_memory >= 16 * 2**30 else 4096
    copy_bytes = 0
    if profile == "full":
        free, _ = torch.cuda.mem_get_info(device)
        copy_bytes = int(free * MEMORY_SHARE / 2) // 4 * 4  # source and destination
    return BurnSettings(duration, interval, n, dtype, check_every=8, copy_bytes=copy_bytes, fault=fault)


def dtype_word(dtype: Any) -> str:
    """`bf16`, `fp32`: the words every other stage uses, not torch's `bfloat16`, `float32`."""
    name = str(dtype).removeprefix("torch.")
    return DTYPE_WORDS.get(name, name)


def at_label(elapsed: float, interval: float) -> str:
    """`at 4.5 s` for intervals under 10 s (whole seconds made two intervals read `at 4 s`), `at 30 s` past."""
    return f"at {elapsed:.1f} s" if interval < 10 else f"at {elapsed:.0f} s"


def interval_measurement(
    item: Interval, settings: BurnSettings, began: float, identity: dict[str, object] | None = None
) -> Measurement:
    dtype = dtype_word(settings.dtype)
    scale, unit = rate_unit(item.device)
    params = {
        "interval": item.index,
        "elapsed_s": round(item.t_end - began, 2),
        "iterations": item.iterations,
        "n": settings.n,
        "dtype": dtype,
        "device_s": round(item.seconds, 4),
        "wall_s": round(item.wall_s, 4),
        "timer": item.timer,
        "copy_gb_s": item.copy_gb_s,
        "wrong_elements": sum(n for _, n in item.wrong),
        **(identity or {}),  # the parent pairs it with its GPU's telemetry and earlier clean runs by these
    }
    name = f"burn {dtype} {settings.n} {at_label(item.t_end - began, settings.interval_s)}"
    value = item.tflops * scale
    return Measurement(
        STAGE, name, value, unit, None, item.iterations, item.device, params, {}, item.t_start, item.t_end
    )


def sustained(
    device: str, intervals: list[Interval], settings: BurnSettings, identity: dict[str, object] | None = None
) -> Measurement:
    scale, unit = rate_unit(device)
    rates = [i.tflops * scale for i in intervals]
    spread = statistics.quantiles(rates, n=4)[2] - statistics.quantiles(rates, n=4)[0] if len(rates) >= 2 else None
    dtype = dtype_word(settings.dtype)
    params = {"intervals": len(rates), "n": settings.n, "dtype": dtype, "best": max(rates), "lowest": min(rates)}
    params |= identity or {}
    copies = [i.copy_gb_s for i in intervals if i.copy_gb_s]
    if copies:
        params["copy_gb_s_median"] = statistics.median(copies)
    return Measurement(
        STAGE,
        f"burn {dtype} {settings.n} sustained",
        statistics.median(rates),
        unit,
        spread,
        len(rates),
        device,
        params,
        {},
        intervals[0].t_start,
        intervals[-1].t_end,
    )


def run(context: StageContext) -> Iterator[Event]:
    spec = context.spec
    devices = yield from resolve_devices(STAGE, spec.device)
    if not devices:
        return
    if any(d.type == "cpu" for d in devices):
        # One thread: a product split over threads stalls at every barrier on a busy host (10x slower on 2
        # cores beside one busy process), which would read as a GPU-style fault. The CPU burn proves the stage.
        torch.set_num_threads(1)
    duration = duration_for(spec)
    fault = str(spec.option("burn_fault") or "")
    settings = {str(d): settings_for(d, spec.profile, duration, fault) for d in devices}
    identities = {str(d): device_identity(d) for d in devices}
    telemetry = ChildTelemetry.open(torch, devices)
    stop, out = threading.Event(), queue.Queue[Any]()
    workers = [threading.Thread(target=DeviceBurn(d, settings[str(d)], out, stop).run, daemon=True) for d in devices]
    intervals: dict[str, list[Interval]] = {str(d): [] for d in devices}
    started: dict[str, Started] = {}
    failed: dict[str, str] = {}
    began = time.time()
    yield LogLine(STAGE, f"burning {', '.join(settings)} for {duration:.0f} s")
    try:
        if telemetry is not None:
            telemetry.start()
        for worker in workers:
            worker.start()
        while any(w.is_alive() for w in workers) or not out.empty():
            if context.cancelled:
                stop.set()
            try:
                item = out.get(timeout=0.2)
            except queue.Empty:
                continue
            if isinstance(item, Started):
                started[item.device] = item
            elif isinstance(item, Failed):
                failed[item.device] = item.error
            elif isinstance(item, Interval):
                intervals[item.device].append(item)
                yield interval_measurement(item, settings[item.device], began, identities[item.device])
                yield Progress(STAGE, min(int(time.time() - began), int(duration)), int(duration), "burning")
    finally:
        stop.set()
        for worker in workers:
            worker.join()
        if telemetry is not None:
            telemetry.stop()
    yield from verdicts(intervals, started, failed, settings, telemetry, identities)


def verdicts(
    intervals: dict[str, list[Interval]],
    started: dict[str, Started],
    failed: dict[str, str],
    settings: dict[str, BurnSettings],
    telemetry: ChildTelemetry | None,
    identities: dict[str, dict[str, object]] | None = None,
) -> Iterator[Event]:
    def conditions(device: str, t0: float, t1: float) -> dict[str, Any]:
        return telemetry.summary(device, t0, t1) if telemetry is not None else {}

    vendor = getattr(telemetry.source, "vendor", None) if telemetry is not None else None

    rates: dict[str, float] = {}
    for device, found in intervals.items():
        if device in failed:
            text = (
                f"the burn on {device} stopped with an error after {len(found)} interval(s): {failed[device]}; "
                + error_next(device)
            )
            yield Verdict(STAGE, "error", Status.FAIL, text, {"error": failed[device]}, device=device)
        if not found:
            continue
        result = sustained(device, found, settings[device], (identities or {}).get(device))
        rates[device] = result.value
        yield result
        yield correctness(device, found, settings[device].check_every, vendor)
        yield over_time(device, found, conditions)
    yield from peers(started, rates, vendor)
    yield from agreement(started)
