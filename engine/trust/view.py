"""A figure's conditions as one typed, read-only record, read from the dict the store, the wire, the reports and the
app keep (that form stays a dict: `Conditions.from_dict` is how trust and the cause function read it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rigcheck.engine.events import Trust
from rigcheck.engine.facts.settings import InForce
from rigcheck.engine.trust.judgement import OUTSIDE_WORDS, Judgement, Reason, note_words

__all__ = ["OUTSIDE_WORDS", "Conditions"]


def _float(data: Mapping[str, Any], *keys: str) -> float | None:
    for key in keys:
        value = data.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


def _number(data: Mapping[str, Any], key: str) -> float | None:
    """A stored number as it was stored (an int stays an int), or None where the key holds none."""
    value = data.get(key)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _records(data: Mapping[str, Any], key: str) -> tuple[Mapping[str, Any], ...]:
    """A stored list of records (processes, ...), leaving out anything that is not one."""
    return tuple(item for item in data.get(key) or () if isinstance(item, Mapping))


def _clock_ratio(data: Mapping[str, Any]) -> float | None:
    """The SM clock against its maximum: as stored, else from the mean and the maximum."""
    ratio = _float(data, "clock_ratio")
    mean, top = _float(data, "sm_clock_mean_mhz"), _float(data, "sm_clock_max_mhz")
    if ratio is None and mean and top:
        return round(mean / top, 3)
    return ratio


@dataclass(frozen=True)
class Conditions:
    """What was around a figure while it was measured, and its trust label with the reasons."""

    trust: Trust | None = None
    trust_reasons: tuple[Reason, ...] = ()
    outside: tuple[Reason, ...] = ()  # the trust reasons that lie outside the hardware measured (others' load, ...)
    judgement: Judgement | None = None  # the figure's judgement as its record (None: no telemetry judged it)
    notes: tuple[str, ...] = ()
    samples: int = 0
    gpu_name: str | None = None
    gpu_vendor: str | None = None
    gpu_pci_bus_id: str | None = None
    throttle: tuple[str, ...] = ()
    clock_ratio: float | None = None
    mem_clock_ratio: float | None = None
    sm_clock_mean_mhz: float | None = None
    sm_clock_max_mhz: float | None = None
    temperature_max_c: float | None = None
    power_mean_w: float | None = None
    power_limit_w: float | None = None
    power_default_limit_w: float | None = None
    other_gpu_processes: tuple[Mapping[str, Any], ...] = ()
    settings: tuple[InForce, ...] = ()
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @staticmethod
    def from_dict(data: Mapping[str, Any] | None) -> Conditions:
        """The typed view of a stored conditions dict; missing keys are None or empty, unknown ones kept in `raw`."""
        data = data or {}
        judged = Judgement.of(data)
        return Conditions(
            trust=judged.trust if judged else None,
            trust_reasons=tuple(judged.reasons) if judged else (),
            outside=tuple(judged.outside) if judged else (),
            judgement=judged,
            notes=tuple(note_words(data)),
            samples=int(data.get("samples") or 0),
            gpu_name=data.get("gpu_name"),
            gpu_vendor=data.get("gpu_vendor"),
            gpu_pci_bus_id=data.get("gpu_pci_bus_id"),
            throttle=tuple(str(r) for r in data.get("throttle") or ()),
            clock_ratio=_clock_ratio(data),
            mem_clock_ratio=_float(data, "mem_clock_ratio"),
            sm_clock_mean_mhz=_float(data, "sm_clock_mean_mhz"),
            sm_clock_max_mhz=_float(data, "sm_clock_max_mhz"),
            temperature_max_c=_float(data, "temperature_max_c"),
            power_mean_w=_float(data, "power_mean_w"),
            power_limit_w=_float(data, "power_limit_w"),
            power_default_limit_w=_float(data, "power_default_limit_w", "power_limit_default_w"),
            other_gpu_processes=tuple(p for p in data.get("other_gpu_processes") or () if isinstance(p, Mapping)),
            settings=tuple(InForce.from_dict(s) for s in data.get("settings") or () if isinstance(s, Mapping)),
            raw=data,
        )

    @property
    def disturbed(self) -> bool:
        """SUSPECT because of something outside the hardware measured: someone else's load on it or its CPUs."""
        return self.judgement is not None and self.judgement.outside_hardware

    @property
    def active_throttle(self) -> tuple[str, ...]:
        return tuple(r for r in self.throttle if r != "idle")

    @property
    def sm_clock_min_mhz(self) -> float | None:
        """The lowest SM clock read in the figure's window, in MHz."""
        return _number(self.raw, "sm_clock_min_mhz")

    @property
    def utilization_mean_pct(self) -> float | None:
        """How busy the GPU was on average over the figure's window, in percent (None: not read, or not judged)."""
        return _number(self.raw, "utilization_mean_pct")

    @property
    def host_cpus(self) -> float | None:
        """The host's CPU count."""
        return _number(self.raw, "host_cpus")

    @property
    def host_others_cpus(self) -> float | None:
        """Mean CPUs kept busy by other processes over the figure's window."""
        return _number(self.raw, "host_others_cpus")

    @property
    def host_own_cpus(self) -> float | None:
        """Mean CPUs kept busy by rigcheck itself over the figure's window."""
        return _number(self.raw, "host_own_cpus")

    @property
    def host_load1(self) -> float | None:
        """The highest one-minute load average read over the figure's window."""
        return _number(self.raw, "host_load1")

    @property
    def host_top_others(self) -> tuple[Mapping[str, Any], ...]:
        """The busiest other processes on the host, each {name, pid, cpus}, busiest first."""
        return _records(self.raw, "host_top_others")

    @property
    def cpu_set_size(self) -> float | None:
        """How many CPUs rigcheck may use, where its CPU set narrows them below the host's (else None)."""
        return _number(self.raw, "cpu_set_size")

    @property
    def cpu_set_others_cpus(self) -> float | None:
        """Mean CPUs of rigcheck's CPU set kept busy by other processes (None: no CPU set narrows them)."""
        return _number(self.raw, "cpu_set_others_cpus")

    @property
    def other_gpu_pids(self) -> tuple[int, ...]:
        """The pids of the other processes on the figure's GPU, as stored."""
        return tuple(self.raw.get("other_gpu_pids") or ())

    @property
    def gpu_idle_before(self) -> Mapping[str, Any] | None:
        """The GPU at the latest moment before the figure when rigcheck had no work on it: {samples, age_s,
        utilization_pct, utilization_max_pct, power_w[, source]} (engine/trust/unseen.py); None where not read."""
        idle = self.raw.get("gpu_idle_before")
        return idle if isinstance(idle, Mapping) else None
