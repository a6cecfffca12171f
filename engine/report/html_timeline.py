"""A run's stored telemetry samples as time series, sensor by sensor, for the HTML report's timelines.

Plain data: html_plots draws it. A reading the sensor did not give is a gap (NaN), never a 0; a series with no
reading at all is left out, and a panel with no series says so instead of drawing empty axes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

BUCKETS = 500  # a plot is about 860 pixels wide: more points than this draw nothing more


@dataclass(frozen=True)
class Series:
    label: str
    t: tuple[float, ...]  # seconds since the run started
    values: tuple[float, ...]  # NaN where the sensor gave nothing
    dashed: bool = False  # a limit, not a reading
    gpu: int | None = None  # the GPU's index, so a GPU keeps one colour in every panel; None: the host's


@dataclass(frozen=True)
class Panel:
    key: str  # a stable name, also the plot's id salt
    title: str
    unit: str
    series: tuple[Series, ...]


@dataclass(frozen=True)
class Span:
    """A stage's time in the run, to shade behind the timelines."""

    name: str
    start: float
    end: float


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else math.nan


def thinned(points: list[tuple[float, float]], buckets: int = BUCKETS) -> list[tuple[float, float]]:
    """At most two points a bucket of time, its lowest and its highest in the order they came: a long run's
    line stays a few hundred KB and still shows every dip (a throttle lasts one sample). A bucket with no
    reading keeps one gap."""
    if len(points) <= 2 * buckets:
        return points
    start, width = points[0][0], (points[-1][0] - points[0][0]) / buckets or 1.0
    groups: dict[int, list[tuple[float, float]]] = {}
    for t, v in points:
        groups.setdefault(min(int((t - start) / width), buckets - 1), []).append((t, v))
    out = []
    for group in groups.values():
        read = [p for p in group if not math.isnan(p[1])]
        if not read:
            out.append(group[0])
            continue
        low, high = min(read, key=lambda p: p[1]), max(read, key=lambda p: p[1])
        out.extend(sorted({low, high}))
    return out


def _series(label: str, points: list[tuple[float, Any]], dashed: bool = False, gpu: int | None = None) -> Series | None:
    values = [(t, _number(v)) for t, v in points]
    if all(math.isnan(v) for _, v in values):
        return None
    kept = thinned(values)
    return Series(label, tuple(t for t, _ in kept), tuple(v for _, v in kept), dashed, gpu)


def _gpu_ids(samples: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """Every GPU seen in any sample, by index, with its name: a GPU that drops out mid-run still has its line."""
    found: dict[int, str] = {}
    for sample in samples:
        for gpu in sample.get("gpus") or []:
            if isinstance(gpu, dict) and isinstance(gpu.get("index"), int):
                found.setdefault(gpu["index"], str(gpu.get("name") or "GPU"))
    return sorted(found.items())


def _gpu_reading(sample: dict[str, Any], index: int, key: str) -> Any:
    return next((g.get(key) for g in sample.get("gpus") or [] if isinstance(g, dict) and g.get("index") == index), None)


class _Builder:
    def __init__(self, samples: list[dict[str, Any]], started: float) -> None:
        self.samples = [s for s in samples if isinstance(s, dict) and isinstance(s.get("t"), int | float)]
        self.t = [float(s["t"]) - started for s in self.samples]
        self.gpus = _gpu_ids(self.samples)
        self.many = len(self.gpus) > 1

    def gpu(self, key: str, words: str, dashed: bool = False) -> list[Series | None]:
        out = []
        for index, name in self.gpus:
            label = f"GPU {index} {words}" if self.many else f"GPU {index} ({name}) {words}"
            points = [(t, _gpu_reading(s, index, key)) for t, s in zip(self.t, self.samples, strict=True)]
            out.append(_series(label, points, dashed, index))
        return out

    def host(self, key: str, label: str, dashed: bool = False) -> Series | None:
        points = [(t, (s.get("host") or {}).get(key)) for t, s in zip(self.t, self.samples, strict=True)]
        return _series(label, points, dashed)

    def cpus(self) -> str:
        """The host's CPU count, in the title rather than as a line: 224 CPUs would flatten a load of 8."""
        counts = {(s.get("host") or {}).get("cpus") for s in self.samples} - {None}
        return "/".join(str(c) for c in sorted(counts, key=str))

    def panel(self, key: str, title: str, unit: str, series: list[Series | None]) -> Panel:
        return Panel(key, title, unit, tuple(s for s in series if s is not None))


def timelines(samples: list[dict[str, Any]], started: float) -> list[Panel]:
    """The clock, temperature, power and host-load panels of a whole run, from its stored samples."""
    b = _Builder(samples, started)
    return [
        b.panel("clock", "Clocks", "MHz", [*b.gpu("sm_clock_mhz", "SM clock"), b.host("cpu_mhz", "CPU clock")]),
        b.panel(
            "temperature",
            "Temperature",
            "°C",
            [*b.gpu("temperature_c", "temperature"), b.host("temperature_c", "CPU temperature")],
        ),
        b.panel(
            "power",
            "Power",
            "W",
            [
                *b.gpu("power_w", "power"),
                *b.gpu("power_limit_w", "power limit", dashed=True),
                b.host("package_power_w", "CPU package power"),
            ],
        ),
        b.panel(
            "host-load",
            f"Host load (of {b.cpus()} CPUs)" if b.cpus() else "Host load",
            "CPUs",
            [
                b.host("load1", "load average (1 min)"),
                b.host("busy_cpus", "CPUs busy, all processes"),
                b.host("others_cpus", "CPUs busy, other processes"),
            ],
        ),
    ]


def stage_spans(stages: list[dict[str, Any]], started: float) -> list[Span]:
    """This host's stages that ran, with their start and end in seconds since the run started."""
    spans = []
    for stage in stages:
        begin, end = stage.get("started"), stage.get("finished")
        if stage.get("host") or not isinstance(begin, int | float) or not isinstance(end, int | float) or end < begin:
            continue
        spans.append(Span(str(stage.get("name") or "?"), float(begin) - started, float(end) - started))
    return spans
