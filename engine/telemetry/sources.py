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
            note = note_in_words(f"{factory.__name__.strip('_')}: {type(error).__name__}: {error}")
            if note not in notes:
                notes.append(note)
            continue
        if source.vendor in vendors:  # sysfs is only a fallback for pyamdgpuinfo
            source.close()
            continue
        vendors.add(source.vendor)
        sources.append(source)
    return sources, notes


# A reader's failure as a person would say it, where the cause is the usual one: (reader, words in the
# error, what to say). A reader's own error text is kept for anything else (a permission, a driver fault).
NOTE_WORDS = (
    ("nvml", ("LibraryNotFound", "Library Not Found", "cannot open shared object", "No such file"), "no NVIDIA driver"),
    ("nvml", ("DriverNotLoaded", "Driver Not Loaded"), "an NVIDIA driver library but no driver loaded"),
    ("amdgpuinfo", ("/dev/dri", "found no AMD GPU"), "no AMD GPU"),
    ("amdgpuinfo", ("No module named",), "no AMD GPU reader (pyamdgpuinfo) installed"),
    ("sysfs", ("no amdgpu card",), "no AMD GPU"),
)


def note_in_words(note: str) -> str:
    """`nvml: NVMLError_LibraryNotFound: NVML Shared Library Not Found` as `no NVIDIA driver`; other notes unchanged."""
    reader, _, text = note.partition(": ")
    for name, clues, words in NOTE_WORDS:
        if reader == name and any(clue in text for clue in clues):
            return words
    return note
