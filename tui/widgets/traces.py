"""What the Clocks panel draws: each reading as a labelled trace with a fixed y-limit, binned in time."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from rigcheck.engine.telemetry.sample import GpuSample, HostSample, Sample, na


@dataclass(frozen=True)
class Trace:
    label: str  # at most 5 characters, for a one-line trace
    legend: str  # the plot's legend
    unit: str
    values: tuple[float | None, ...]
    top: float  # fixed y-limit, so an unchanged history draws the same picture
    right: bool = False  # on the plot's right axis
    fmt: str = "{:.0f}"
    plotted: bool = True  # False: only as a one-line trace (its scale would flatten the others)
    of: float | None = None  # a limit the latest value is shown against, as in "126/700 W"

    def latest_text(self) -> str:
        latest = next((v for v in reversed(self.values) if v is not None), None)
        limit = f"/{self.of:.0f}" if self.of and latest is not None else ""
        return na(latest, self.fmt + limit, f" {self.unit}")


def binned(samples: list[Sample], window_s: float, columns: int) -> tuple[list[float], list[Sample]]:
    """The newest sample of each time bin (one bin a column), with its x in seconds before the newest."""
    column_s = window_s / columns
    bins = {int(s.t // column_s): s for s in samples}
    keys = sorted(bins)[-columns:]
    return [(key - keys[-1]) * column_s for key in keys], [bins[key] for key in keys]


def _step_up(value: float, step: float) -> float:
    """A y-limit that moves only in whole steps, so the plot is not rebuilt for every small rise."""
    return max(step, step * math.ceil(value * 1.1 / step))


def pick_gpu(sample: Sample, index: int) -> GpuSample | None:
    """The sample's reading of the GPU with this telemetry index, else its first."""
    return next((g for g in sample.gpus if g.index == index), sample.gpus[0] if sample.gpus else None)


def gpu_traces(samples: list[Sample], index: int = 0) -> tuple[list[Trace], list[str]]:
    """One GPU's shader clock (left axis, up to its maximum), temperature (right, 0-100 C), and
    its power against the limit (one-line trace only)."""
    gpus = [pick_gpu(s, index) for s in samples]
    clocks = tuple(g.sm_clock_mhz if g else None for g in gpus)
    latest = gpus[-1]
    assert latest is not None
    top = latest.max_sm_clock_mhz or _step_up(max((c for c in clocks if c), default=1.0), 500)
    power = tuple(g.power_w if g else None for g in gpus)
    power_top = latest.power_limit_w or _step_up(max((v for v in power if v), default=1.0), 50)
    return [
        Trace("SM", "SM MHz", "MHz", clocks, top),
        Trace("temp", "temp C", "C", tuple(g.temperature_c if g else None for g in gpus), 100.0, right=True),
        Trace("power", "power W", "W", power, power_top, plotted=False, of=latest.power_limit_w),
    ], []


def host_traces(samples: list[Sample], busy: bool = True) -> tuple[list[Trace], list[str]]:
    """The CPU's frequency (left axis), package temperature and power (right axis), where readable,
    and the names of those that are not. With `busy`, busy CPUs stand in when none is readable."""
    hosts = [s.host for s in samples]

    def values(read: Callable[[HostSample], float | None]) -> tuple[float | None, ...]:
        return tuple(read(h) for h in hosts)

    mhz = values(lambda h: h.cpu_mhz)
    temp = values(lambda h: h.temperature_c)
    power = values(lambda h: h.package_power_w)
    top_mhz = hosts[-1].cpu_max_mhz or _step_up(max((v for v in mhz if v), default=1.0), 500)
    top_power = _step_up(max((v for v in power if v), default=1.0), 50)
    candidates = [
        ("CPU MHz", Trace("CPU", "CPU MHz", "MHz", mhz, top_mhz)),
        ("temp", Trace("CPU C", "CPU pkg C", "C", temp, 100.0, right=True)),
        ("power", Trace("CPU W", "CPU pkg W", "W", power, top_power, right=True, fmt="{:.1f}")),
    ]
    traces = [trace for _, trace in candidates if any(v is not None for v in trace.values)]
    missing = [name for name, trace in candidates if all(v is None for v in trace.values)]
    if busy and not traces:
        cpus = float(hosts[-1].cpus or 1)
        traces.append(Trace("busy", "busy CPUs", "CPUs", values(lambda h: h.busy_cpus), cpus, fmt="{:.1f}"))
    return traces, missing
