"""Picks the GPU readers that work on this host, by trying each in turn: NVML, pyamdgpuinfo, sysfs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from rigcheck.engine.telemetry.sample import GpuSample


class GpuSource(Protocol):
    vendor: str

    def read(self) -> list[GpuSample]: ...

    def close(self) -> None: ...


def _nvml() -> GpuSource:
    from rigcheck.engine.telemetry.nvml import NvmlSource

    return NvmlSource()


def _amdgpuinfo() -> GpuSource:
    from rigcheck.engine.telemetry.amdgpu import AmdGpuInfoSource

    return AmdGpuInfoSource()


def _sysfs() -> GpuSource:
    from rigcheck.engine.telemetry.sysfs import AmdSysfsSource

    return AmdSysfsSource()


DEFAULT_FACTORIES: tuple[Callable[[], GpuSource], ...] = (_nvml, _amdgpuinfo, _sysfs)


def available_gpu_sources(
    factories: tuple[Callable[[], Any], ...] = DEFAULT_FACTORIES,
) -> tuple[list[GpuSource], list[str]]:
    """Every reader that starts, and a note for each that did not (missing library, no device)."""
    sources: list[GpuSource] = []
    notes: list[str] = []
    vendors: set[str] = set()
    for factory in factories:
        try:
            source = factory()
        except Exception as error:
            notes.append(f"{factory.__name__.strip('_')}: {type(error).__name__}: {error}")
            continue
        if source.vendor in vendors:  # sysfs is only a fallback for pyamdgpuinfo
            source.close()
            continue
        vendors.add(source.vendor)
        sources.append(source)
    return sources, notes
