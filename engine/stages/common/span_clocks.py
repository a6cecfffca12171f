"""SM and memory clocks, power and clock-event reasons read in the stage child at the start and the end of a
figure's timed span, so a figure shorter than the telemetry's sampling is still judged on its own clocks.

Through hw.nvml (no CUDA context; about 3 us a call on an H200), opened once per process; where NVML is
absent (ROCm, a host without the driver's library) a span reads nothing and the figure keeps its old
judgement. Each span records what its readings cost against its own length (`cost_s`, `span_s`).
"""

from __future__ import annotations

import contextlib
import time
import weakref
from typing import Any

from rigcheck.engine.hw.nvml import CLOCK_MEM, CLOCK_SM, Nvml, NvmlFailure, decode_reasons, ok, open_nvml
from rigcheck.engine.hw.pci import normalise_bus_id

Reading = tuple[int | None, int | None, float | None, int | None]  # SM MHz, memory MHz, W, reasons mask


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


_nvml: list[Nvml | None] = []  # opened at the first span of this process; [None] where NVML is not usable
_readers: dict[str, SpanReader | None] = {}


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
    if nvml is not None:
        for index in range(ok(nvml.count()) or 0):
            handle = nvml.handle(index)
            pci = nvml.pci_info(handle) if not isinstance(handle, NvmlFailure) else handle
            if not isinstance(pci, NvmlFailure) and normalise_bus_id(pci.bus_id) == address:
                found = SpanReader(nvml, handle)
                break
    _readers[address] = found
    return found


class Span:
    """Readings at the start (made now) and at `finish()`; `record(stats)` ties them to a figure's timings."""

    def __init__(self, reader: SpanReader | None) -> None:
        self.reader = reader
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
