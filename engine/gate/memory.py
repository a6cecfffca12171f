"""Each GPU against its own history, matched by UUID: counters that grow, a link that trained lower, new XIDs.

The history is the health facts of earlier runs on this host, the gate's and full runs' alike. Each finding
is a WARN that names the first run where the value changed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.gate.checks import verdict

# Correctable ECC errors added since the first run kept before a WARN: a handful over months is the normal
# background of HBM; tens are a trend (NVSentinel's open issue: a degrading GPU's growth went unreported).
ECC_RISE_WARN = 10
REMAP_RISE_WARN = 1  # every row remapped onto a spare uses up one of a fixed few
DAY_S = 86400.0


@dataclass(frozen=True)
class Gpu:
    """Who a history finding is about: the device name verdicts carry, and the UUID history is matched by."""

    label: str
    uuid: str | None


@dataclass(frozen=True)
class Point:
    """One GPU's counters in one run."""

    run_id: int
    started: float
    corrected: int | None  # lifetime correctable ECC errors (volatile where lifetime is not offered)
    remapped: int | None  # rows remapped onto spares, correctable and uncorrectable together
    width: int | None
    max_gen: int | None
    xids: tuple[int, ...]


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def point(run_id: int, started: float, gpu: dict[str, Any]) -> Point:
    """A stored GPU record (the gate's or the health stage's facts) as a Point."""
    ecc = given if isinstance(given := gpu.get("ecc"), dict) else {}
    rows = given if isinstance(given := gpu.get("row_remap"), dict) else {}
    link = given if isinstance(given := gpu.get("pcie"), dict) else {}
    xid = given if isinstance(given := gpu.get("xid"), dict) else {}
    corrected = _int(ecc.get("aggregate_corrected", ecc.get("volatile_corrected")))
    remapped = None
    if "correctable" in rows or "uncorrectable" in rows:
        remapped = int(rows.get("correctable", 0)) + int(rows.get("uncorrectable", 0))
    codes = tuple(sorted(int(c) for c in (xid.get("codes") or {})))
    return Point(run_id, started, corrected, remapped, _int(link.get("width")), _int(link.get("max_gen")), codes)


def gpu_uuid(gpu: dict[str, Any]) -> str | None:
    return gpu.get("uuid") or (gpu.get("extra") or {}).get("uuid")


def history(rows: list[tuple[int, float, dict[str, Any]]], uuid: str) -> list[Point]:
    """This GPU's points, oldest first, from (run id, started, health facts) rows."""
    points = [
        point(run_id, started, gpu)
        for run_id, started, facts in rows
        for gpu in facts.get("gpus") or []
        if isinstance(gpu, dict) and gpu_uuid(gpu) == uuid
    ]
    return sorted(points, key=lambda p: p.run_id)


def _ago(seconds: float) -> str:
    days = seconds / DAY_S
    return f"{days:.1f} days" if days >= 1 else f"{seconds / 3600:.1f} hours"


def _rise(series: list[tuple[Point, int]], now: int) -> tuple[int, Point, Point | None] | None:
    """(start value, last run at it, first run above it or None) since the counter last went down (a driver
    reload clears volatile counts); None where there is nothing to compare or it went down just now."""
    if not series or now < series[-1][1]:
        return None
    start = len(series) - 1
    while start > 0 and series[start - 1][1] <= series[start][1]:
        start -= 1
    base = series[start][1]
    last_at_base = series[start][0]
    for earlier, value in series[start:]:
        if value != base:
            return base, last_at_base, earlier
        last_at_base = earlier
    return base, last_at_base, None


def _counter(
    gpu: Gpu, past: list[Point], now: int | None, field: str, check: str, words: str, warn_at: int, advice: str
) -> Verdict | None:
    if now is None:
        return None
    series = [(p, getattr(p, field)) for p in past if getattr(p, field) is not None]
    found = _rise(series, now)
    if found is None:
        return None
    base, last_at_base, first_changed = found
    rise = now - base
    name = f"{gpu.label} {gpu.uuid}"
    since = "this run" if first_changed is None else f"run {first_changed.run_id}"
    numbers: dict[str, Any] = {
        "from": base,
        "to": now,
        "since_run": None if first_changed is None else first_changed.run_id,
    }
    if rise < warn_at:
        text = f"{name}: {words} at {now}, {rise} more than run {last_at_base.run_id} (below {warn_at})"
        return verdict(check, gpu.label, Status.PASS, text, words, numbers)
    elapsed = time.time() - last_at_base.started
    rate = rise / (elapsed / DAY_S) if elapsed >= DAY_S else None  # a rate over less than a day says little
    numbers |= {"per_day": None if rate is None else round(rate, 2), "base_run": last_at_base.run_id}
    pace = f", {rate:.1f} a day" if rate is not None else ""
    text = (
        f"{name}: {words} rose from {base} to {now} since {since} ({_ago(elapsed)} after run "
        f"{last_at_base.run_id}{pace}); next: {advice}"
    )
    return verdict(check, gpu.label, Status.WARN, text, f"{gpu.label} {words} +{rise}", numbers)


def _link(gpu: Gpu, past: list[Point], now: Point) -> Verdict | None:
    for field, unit in (("width", "x"), ("max_gen", "Gen")):
        value = getattr(now, field)
        before = [(p, getattr(p, field)) for p in past if getattr(p, field) is not None]
        if value is None or not before:
            continue
        best = max(v for _, v in before)
        if value >= best:
            continue
        best_run = max((p for p, v in before if v == best), key=lambda p: p.run_id)
        lower = [p for p, v in before if p.run_id > best_run.run_id]
        first = f"run {lower[0].run_id}" if lower else "this run"
        text = (
            f"{gpu.label} {gpu.uuid}: PCIe link trained at {unit}{value}, lower than {unit}{best} in run "
            f"{best_run.run_id}, since {first}; reseat the GPU or check its riser"
        )
        numbers = {"field": field, "now": value, "before": best, "best_run": best_run.run_id}
        return verdict(
            "pcie-history", gpu.label, Status.WARN, text, f"{gpu.label} PCIe {unit}{value} (was {best})", numbers
        )
    return None


def _xids(gpu: Gpu, past: list[Point], now: Point) -> Verdict | None:
    known = {c for p in past for c in p.xids}
    fresh = [c for c in now.xids if c not in known]
    if not fresh:
        return None
    text = f"{gpu.label} {gpu.uuid}: logged XID {', '.join(map(str, fresh))} for the first time, in this run"
    return verdict("xid-history", gpu.label, Status.WARN, text, f"{gpu.label} first XID {fresh[0]}", {"new": fresh})


def compare(gpu: Gpu, current: dict[str, Any], rows: list[tuple[int, float, dict[str, Any]]]) -> list[Verdict]:
    """This GPU against its own history; [] for a GPU never seen (no UUID, or its first run)."""
    if gpu.uuid is None:
        return []
    past = history(rows, gpu.uuid)
    if not past:
        text = f"{gpu.label} {gpu.uuid}: first run for this GPU, nothing to compare yet"
        return [verdict("history", gpu.label, Status.SKIP, text, "no history", {"runs": 0})]
    now = point(0, time.time(), current)
    found = [
        _counter(
            gpu,
            past,
            now.corrected,
            "corrected",
            "ecc-history",
            "correctable ECC",
            ECC_RISE_WARN,
            "watch for a row remap; plan a replacement if it keeps growing",
        ),
        _counter(
            gpu,
            past,
            now.remapped,
            "remapped",
            "remap-history",
            "remapped rows",
            REMAP_RISE_WARN,
            "each remap uses a spare row; plan a replacement before they run out",
        ),
        _link(gpu, past, now),
        _xids(gpu, past, now),
    ]
    return [v for v in found if v is not None]
