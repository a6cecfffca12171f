"""Immutable telemetry samples in normalised units (MHz, degrees C, W, bytes, %); None means not available."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from rigcheck.engine.hw.pci import normalise_bus_id


@dataclass(frozen=True)
class ProcessUse:
    """One process using a GPU or the host's CPUs."""

    pid: int
    name: str
    cpus: float | None = None  # CPUs' worth of busy time (host list)
    gpu_memory: int | None = None  # bytes used on this GPU (GPU list)
    sm_pct: float | None = None  # SM use in % where the driver reports it (GPU list)


@dataclass(frozen=True)
class GpuSample:
    index: int
    name: str
    vendor: str
    source: str
    sm_clock_mhz: float | None = None
    mem_clock_mhz: float | None = None
    max_sm_clock_mhz: float | None = None
    temperature_c: float | None = None
    power_w: float | None = None
    power_limit_w: float | None = None
    utilization_pct: float | None = None
    memory_used: int | None = None
    memory_total: int | None = None
    gtt_used: int | None = None
    gtt_total: int | None = None
    throttle: tuple[str, ...] = ()
    process_pids: tuple[int, ...] = ()
    pci_bus_id: str | None = None  # normalised, "0000:1b:00.0": how a torch device finds its telemetry
    uuid: str | None = None  # "GPU-..." on NVIDIA; None where unknown
    processes: tuple[ProcessUse, ...] = ()  # every compute process on this GPU, rigcheck's own included
    max_mem_clock_mhz: float | None = None
    power_default_limit_w: float | None = None  # the board's default power limit, to tell a lowered one
    power_max_limit_w: float | None = None  # the most the limit may be raised to
    # Device memory in use that no listed process accounts for: a process in another container or PID
    # namespace. None where it cannot be told (no v2 memory reading, or a listed process's memory unknown).
    memory_unlisted: int | None = None
    # SM use per pid over the last second, every pid the driver sampled (also pids in no process list);
    # None where the driver did not answer. Empty: it answered that no process worked.
    sm_by_pid: tuple[tuple[int, float], ...] | None = None
    unseen_pids: tuple[int, ...] = ()  # pids of `processes` that this PID namespace cannot resolve


@dataclass(frozen=True)
class HostSample:
    cpus: int
    load1: float | None
    busy_cpus: float  # CPUs' worth of busy time, all processes
    own_cpus: float  # of which rigcheck and its stage children
    per_cpu_pct: tuple[float, ...] = ()
    cpu_mhz: float | None = None
    temperature_c: float | None = None
    own_pids: tuple[int, ...] = ()
    top_others: tuple[ProcessUse, ...] = ()  # busiest processes not rigcheck's own, busiest first, at most 5
    # The same processes' use over this sample's own interval (top_others is the last scan's, up to 2 s old):
    # what a figure's reasons name, beside its total of others' load from the same samples. None: not read.
    others_now: tuple[ProcessUse, ...] | None = None
    cpu_max_mhz: float | None = None
    package_power_w: float | None = None  # CPU package power from RAPL; None where unreadable
    # Where rigcheck may use fewer CPUs than the host has (affinity, cgroup cpuset or quota); None otherwise.
    set_cpus: int | None = None  # the CPUs rigcheck may run on
    set_busy_cpus: float | None = None  # CPUs' worth of busy time on those CPUs, all processes
    quota_cpus: float | None = None  # a cgroup CPU quota tighter than the set
    group_busy_cpus: float | None = None  # CPUs' worth used by every process in rigcheck's cgroup
    cpu_limit: str | None = None  # what bounds the CPUs, in words

    @property
    def others_cpus(self) -> float:
        return max(0.0, self.busy_cpus - self.own_cpus)

    @property
    def set_others_cpus(self) -> float | None:
        """Other processes' busy time on the CPUs rigcheck may run on."""
        return None if self.set_busy_cpus is None else max(0.0, self.set_busy_cpus - self.own_cpus)

    @property
    def group_others_cpus(self) -> float | None:
        """Other processes' share of rigcheck's cgroup quota."""
        return None if self.group_busy_cpus is None else max(0.0, self.group_busy_cpus - self.own_cpus)


def find_gpu(gpus: tuple[GpuSample, ...], bus_id: str | None = None, uuid: str | None = None) -> GpuSample | None:
    """The reading of the GPU with this PCI address or UUID: never by position, which visible-device
    lists reorder."""
    wanted = normalise_bus_id(bus_id)
    for gpu in gpus:
        if wanted is not None and normalise_bus_id(gpu.pci_bus_id) == wanted:
            return gpu
        if uuid and gpu.uuid and _bare_uuid(gpu.uuid) == _bare_uuid(uuid):
            return gpu
    return None


def _bare_uuid(text: str) -> str:
    """torch prints a UUID without NVML's "GPU-" prefix."""
    text = str(text).strip().lower()
    return text[4:] if text.startswith("gpu-") else text


@dataclass(frozen=True)
class Sample:
    t: float
    host: HostSample
    gpus: tuple[GpuSample, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["host"]["others_cpus"] = round(self.host.others_cpus, 3)
        return data


def na(value: float | int | None, fmt: str = "{:.0f}", unit: str = "") -> str:
    """Format a reading, or N/A where the sensor is missing."""
    return "N/A" if value is None else fmt.format(value) + unit
