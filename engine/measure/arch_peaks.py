"""A GPU's compute and memory peaks from what its driver reports (SMs or CUs, clocks, bus width) and its
architecture's per-unit rates (arch_rates.json beside this module, each rate with its source), so a GPU that the
reference table does not list still has peaks; an architecture with no rates on record gets none, with the reason.

Standard library only: the stage children and the parent both read it.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RATES = Path(__file__).with_name("arch_rates.json")
TOLERANCE = 0.03  # a derived peak within 3% of its datasheet figure agrees with it
CONSUMER = re.compile(r"\b(GeForce|TITAN)\b", re.IGNORECASE)  # boards whose tensor rates with fp32 accumulate halve


@dataclass(frozen=True)
class DeviceProps:
    """What the driver reports of one GPU: enough to derive its peaks."""

    name: str
    arch: str  # "sm_90", "gfx942" (feature flags dropped)
    units: int | None = None  # SMs or CUs
    sm_clock_max_mhz: float | None = None
    mem_clock_max_mhz: float | None = None
    memory_bus_bits: int | None = None


@dataclass(frozen=True)
class Peak:
    """A derived peak and how it was derived ('derived from 132 SMs x 1,830 MHz x 4,096 bf16 FLOP/clock (sm_90)')."""

    value: float  # TFLOP/s for a dtype, GB/s for memory
    what: str  # the dtype, or "memory"
    words: str
    family: str
    source: str  # the rate's citation


@dataclass(frozen=True)
class NoPeak:
    """Why no peak could be derived: never a guess."""

    what: str
    reason: str


@functools.cache
def load(path: Path = RATES) -> dict[str, Any]:
    return dict(json.loads(path.read_text(encoding="utf-8")))


def arch_key(arch: str) -> str:
    """'gfx942:sramecc+:xnack-' -> 'gfx942'; 'sm_90a' -> 'sm_90'."""
    base = arch.strip().split(":")[0].lower()
    return base[:-1] if re.fullmatch(r"sm_\d+[af]", base) else base


def arch_entry(arch: str) -> dict[str, Any] | None:
    return load()["archs"].get(arch_key(arch))


def family_of(arch: str) -> str | None:
    entry = arch_entry(arch)
    return str(entry["family"]) if entry else None


def source_of(key: str) -> str:
    found = load()["sources"].get(key) or {}
    return f"{found.get('cite', key)} ({found.get('page', '')})"


def compute_peak(props: DeviceProps, dtype: str) -> Peak | NoPeak:
    """TFLOP/s: units x the clock the rate is rated at x the architecture's dense FLOP per clock per unit."""
    entry = arch_entry(props.arch)
    if entry is None:
        return NoPeak(dtype, f"no per-unit rates on record for {props.arch or 'an unknown architecture'}")
    rate = entry["rates"].get(dtype)
    if rate is None:
        return NoPeak(dtype, f"{entry['family']} ({arch_key(props.arch)}) has no dense {dtype} rate on record")
    if not props.units or not props.sm_clock_max_mhz:
        return NoPeak(dtype, "the driver reported no SM/CU count or maximum clock for it")
    unit = "SMs" if entry["vendor"] == "nvidia" else "CUs"
    clock, notes = float(props.sm_clock_max_mhz), []
    rated = entry.get("rated_clock_share")
    if rated and dtype in rated["dtypes"]:
        clock *= float(rated["share"])
        notes.append(f"{clock:,.0f} MHz rated of the {props.sm_clock_max_mhz:,.0f} MHz maximum")
    if dtype in entry.get("consumer_half", ()) and CONSUMER.search(props.name):
        rate //= 2
        notes.append("GeForce: half rate with fp32 accumulate")
    value = props.units * clock * rate / 1e6
    words = (
        f"derived from {props.units} {unit} x {clock:,.0f} MHz x {rate:,} {dtype} FLOP/clock ({arch_key(props.arch)})"
    )
    return Peak(value, dtype, words + (f"; {'; '.join(notes)}" if notes else ""), entry["family"], entry["source"])


def memory_peak(props: DeviceProps) -> Peak | NoPeak:
    """GB/s: bus width / 8 x the maximum memory clock x the transfers per clock the driver's clock counts."""
    entry = arch_entry(props.arch)
    if entry is None:
        return NoPeak("memory", f"no memory rule on record for {props.arch or 'an unknown architecture'}")
    transfers = entry.get("memory_transfers_per_clock")
    if transfers is None:
        why = f"how the driver's memory clock on {entry['family']} ({arch_key(props.arch)}) maps to transfers"
        return NoPeak("memory", f"{why} is not on record")
    if not props.memory_bus_bits or not props.mem_clock_max_mhz:
        return NoPeak("memory", "the driver reported no memory bus width or maximum memory clock for it")
    value = props.memory_bus_bits / 8 * props.mem_clock_max_mhz * transfers / 1e3
    words = (
        f"derived from a {props.memory_bus_bits:,}-bit bus x {props.mem_clock_max_mhz:,.0f} MHz x {transfers} "
        f"transfers/clock ({arch_key(props.arch)})"
    )
    source = "nvml-memory" if entry["vendor"] == "nvidia" else "amdgpu-mclk"
    return Peak(value, "memory", words, entry["family"], source)


def peak(props: DeviceProps, what: str) -> Peak | NoPeak:
    """The derived peak for a dtype or for "memory"."""
    return memory_peak(props) if what == "memory" else compute_peak(props, what)


def _number(value: Any) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def props_of(params: Mapping[str, Any], conditions: Mapping[str, Any] | None = None) -> DeviceProps | None:
    """A figure's device properties, as its stage stamped them (stages/common/device_facts.py), with the sampler's
    maximum clocks where the stage had none; None where the figure names no architecture."""
    conditions = conditions or {}
    arch = params.get("gpu_arch")
    if not arch:
        return None
    units = _number(params.get("gpu_units"))
    bus = _number(params.get("memory_bus_bits"))
    return DeviceProps(
        str(params.get("gpu_name") or conditions.get("gpu_name") or ""),
        str(arch),
        int(units) if units else None,
        _number(params.get("sm_clock_max_mhz")) or _number(conditions.get("sm_clock_max_mhz")),
        _number(params.get("mem_clock_max_mhz")),
        int(bus) if bus else None,
    )


def specimen_props(specimen: Mapping[str, Any]) -> DeviceProps:
    return DeviceProps(
        specimen["name"],
        specimen["arch"],
        specimen.get("units"),
        specimen.get("sm_clock_max_mhz"),
        specimen.get("mem_clock_max_mhz"),
        specimen.get("memory_bus_bits"),
    )


def specimen_of(model: str) -> dict[str, Any] | None:
    return next((s for s in load()["specimens"] if s["model"] == model), None)


@dataclass(frozen=True)
class Check:
    """One datasheet peak against its derivation."""

    model: str
    what: str
    datasheet: float
    derived: float | None
    words: str  # the derivation, or why there is none, or the declared exception

    @property
    def error(self) -> float | None:
        return None if self.derived is None else self.derived / self.datasheet - 1

    @property
    def agrees(self) -> bool:
        return self.error is not None and abs(self.error) <= TOLERANCE


def check_peaks(table_peaks: Mapping[str, Mapping[str, float]]) -> list[Check]:
    """Every datasheet peak (the reference table's models' and the specimens' own) against its derivation:
    compute dtypes and memory; a model with no specimen on record is listed as not checked."""
    rows: list[Check] = []
    peaks = {model: dict(values) for model, values in table_peaks.items()}
    for specimen in load()["specimens"]:
        peaks.setdefault(specimen["model"], {}).update(specimen.get("peaks", {}))
    for model, values in peaks.items():
        specimen = specimen_of(model)
        for what, datasheet in values.items():
            if what == "host_link" or what.startswith("cpu_"):
                continue
            if specimen is None or not specimen.get("units"):
                rows.append(
                    Check(model, what, datasheet, None, "not checked: no driver-reported SMs and clocks on record")
                )
                continue
            found = peak(specimen_props(specimen), what)
            exception = specimen.get("exceptions", {}).get(what)
            if isinstance(found, NoPeak):
                rows.append(Check(model, what, datasheet, None, found.reason))
            else:
                rows.append(Check(model, what, datasheet, found.value, exception or found.words))
    return rows
