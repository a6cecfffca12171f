"""SM and memory clocks, power and clock-event reasons read in the stage child at the start and the end of a
figure's timed span, so a figure shorter than the telemetry's sampling is still judged on its own clocks; and
now and then the GPU's utilization while the child leaves it idle (`idle_probe`), to see others' work.

Through hw.nvml (no CUDA context; about 3 us a call on an H200), opened once per process; where NVML is
absent (ROCm, a host without the driver's library) a span reads nothing and the figure keeps its old
judgement. Each span records what its readings cost against its own length (`cost_s`, `span_s`).
"""

from __future__ import annotations

import contextlib
import itertools
import time
import weakref
from typing import Any

from rigcheck.engine.hw.gpu_at import gpu_at
from rigcheck.engine.hw.nvml import (
    CLOCK_MEM,
    CLOCK_SM,
    SAMPLES_GPU_UTILIZATION,
    Nvml,
    decode_reasons,
    ok,
    open_nvml,
)

Reading = tuple[int | None, int | None, float | None, int | None]  # SM MHz, memory MHz, W, reasons mask
# Before the first span of each GPU in a process, and again after PROBE_EVERY_S, the child leaves the GPU idle for
# PROBE_S and reads the driver's own utilization samples whose whole period fell in that time (none covers its
# own last work): a GPU busy then is someone else's, even where no process list can show who (another container).
PROBE_S = 0.6
PROBE_EVERY_S = 60.0


class SpanReader:
    """The four readings of one GPU, found by its PCI address."""

    def __init__(self, nvml: Any, handle: Any) -> None:
        self.nvml = nvml
        self.handle = handle
        self.max_sm = ok(nvml.max_clock(handle, CLOCK_SM))
        self.max_mem = ok(nvml.max_clock(handle, CLOCK_MEM))

    def read(self) -> Reading:
        nvml, handle = self.nvml, self.handle
        power = ok(nvml.power_usage(handle))
        return (
            ok(nvml.clock(handle, CLOCK_SM)),
            ok(nvml.clock(handle, CLOCK_MEM)),
            None if power is None else power * 1e-3,
            ok(nvml.clock_event_reasons(handle)),
        )


_sleep = time.sleep  # tests replace it
_nvml: list[Nvml | None] = []  # opened at the first span of this process; [None] where NVML is not usable
_readers: dict[str, SpanReader | None] = {}
_probes: dict[str, tuple[float, dict[str, Any] | None]] = {}  # address -> (monotonic time, the last probe)


def _open() -> Nvml | None:
    if not _nvml:
        opened = open_nvml()
        _nvml.append(opened if isinstance(opened, Nvml) else None)
    return _nvml[0]


def reader_for(address: str | None) -> SpanReader | None:
    """The reader of the GPU at this PCI address, or None where NVML cannot place it."""
    if address is None:
        return None
    if address in _readers:
        return _readers[address]
    found: SpanReader | None = None
    nvml = _open()
    handle = gpu_at(nvml, address) if nvml is not None else None
    if nvml is not None and handle is not None:
        found = SpanReader(nvml, handle)
    _readers[address] = found
    return found


def _period_us(found: list[tuple[int, float]]) -> float:
    """The driver's sampling period (1/6 s to 1 s by product), from its samples' spacing; a sample covers the
    period before its time stamp. Unknown (too few samples): as long as the longest, so none is taken."""
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(found) if b[0] > a[0]]
    return float(min(gaps)) if gaps else 1e6


def idle_probe(reader: SpanReader) -> dict[str, Any] | None:
    """The GPU's utilization (the driver's samples) and power while this process leaves it idle for PROBE_S; the
    caller has synchronised, so none of its own work is running. None where the driver keeps no such samples."""
    began = time.time()
    _sleep(PROBE_S)
    found = sorted(ok(reader.nvml.samples(reader.handle, SAMPLES_GPU_UTILIZATION, int((began - 1.0) * 1e6))) or [])
    values = [value for stamp, value in found if stamp - _period_us(found) >= began * 1e6]
    if not values:
        return None
    power = ok(reader.nvml.power_usage(reader.handle))
    return {
        "samples": len(values),
        "utilization_pct": round(sum(values) / len(values), 1),
        "utilization_max_pct": max(values),
        "power_w": None if power is None else round(power * 1e-3, 1),
        "at": began,
    }


def probe_if_due(address: str | None, reader: SpanReader | None) -> dict[str, Any] | None:
    """The latest idle probe of this GPU, made now where none was made in the last PROBE_EVERY_S."""
    if address is None or reader is None:
        return None
    last = _probes.get(address)
    if last is None or time.monotonic() - last[0] >= PROBE_EVERY_S:
        try:
            found = idle_probe(reader)
        except Exception:  # a sensor that fails is a gap, never a failed figure
            found = None
        last = _probes[address] = (time.monotonic(), found)
    return last[1]


class Span:
    """Readings at the start (made now) and at `finish()`; `record(stats)` ties them to a figure's timings."""

    def __init__(self, reader: SpanReader | None, probe: dict[str, Any] | None = None) -> None:
        self.reader = reader
        self.probe = probe
        self.cost_s = 0.0
        self.start: Reading | None = self._read()
        self.started = time.perf_counter()
        self.result: dict[str, Any] | None = None

    def _read(self) -> Reading | None:
        if self.reader is None:
            return None
        begun = time.perf_counter()
        try:
            return self.reader.read()
        except Exception:  # a sensor that fails is a gap, never a failed figure
            return None
        finally:
            self.cost_s += time.perf_counter() - begun

    def finish(self) -> dict[str, Any] | None:
        span_s = time.perf_counter() - self.started
        end = self._read()
        if self.start is None or end is None or self.reader is None:
            return None
        mask = (self.start[3] or 0) | (end[3] or 0)
        self.result = {
            "sm_mhz": [self.start[0], end[0]],
            "mem_mhz": [self.start[1], end[1]],
            "power_w": [self.start[2], end[2]],
            "reasons": list(decode_reasons(mask)),
            "max_sm_mhz": self.reader.max_sm,
            "max_mem_mhz": self.reader.max_mem,
            "cost_s": round(self.cost_s, 7),
            "span_s": round(span_s, 6),
        }
        if self.probe is not None:
            probe = {k: v for k, v in self.probe.items() if k != "at"}
            self.result["idle_probe"] = {**probe, "age_s": round(time.time() - self.probe["at"], 1)}
        return self.result


_by_stats: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def record(stats: Any, span: Span) -> Any:
    """Tie the span's readings to the timings it covered; returns `stats`."""
    if span.result is not None:
        with contextlib.suppress(TypeError):  # not weakly referable: no readings, as without NVML
            _by_stats[stats] = span.result
    return stats


def of(stats: Any) -> dict[str, Any] | None:
    """The span readings recorded for these timings, if any."""
    try:
        return _by_stats.get(stats)
    except TypeError:
        return None
