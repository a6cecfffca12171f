"""The samples inside a figure's window reduced to its conditions: host load, the busiest other processes, CPU
limits, and the GPU's clocks, power and other processes."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any

from rigcheck.engine.events import Measurement
from rigcheck.engine.hw.devices import nvml_index
from rigcheck.engine.telemetry.sample import GpuSample, HostSample, ProcessUse, Sample, find_gpu


def gpu_index_for(measurement: Measurement, samples: list[Sample]) -> int | None:
    """The telemetry index of the GPU a figure was measured on: by PCI bus id, else UUID, in any sample of
    its window (one failed driver read drops a tick's GPUs), else by position."""
    if not measurement.device.startswith("cuda"):
        return None
    bus, uuid = measurement.params.get("pci_bus_id"), measurement.params.get("gpu_uuid")
    for sample in reversed(samples):
        gpu = find_gpu(sample.gpus, bus, uuid)
        if gpu is not None:
            return gpu.index
    return nvml_index(measurement.device)


def _mean(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


NAMED_CPUS_MIN = 0.05  # as the host reader's scan: less is no process to stop


def listed_others(sample: Sample) -> tuple[ProcessUse, ...]:
    """The other processes a sample names: their use over the sample's own interval where it was read (the
    same interval as its total), else the last process scan's (older samples)."""
    host = sample.host
    return host.others_now if host.others_now is not None else host.top_others


def busiest_others(samples: list[Sample], own: set[int]) -> list[dict[str, Any]]:
    """Other host processes by their mean CPU use across the window, busiest first."""
    totals: dict[int, float] = {}
    names: dict[int, str] = {}
    for sample in samples:
        for proc in listed_others(sample):
            if proc.pid in own:
                continue
            totals[proc.pid] = totals.get(proc.pid, 0.0) + (proc.cpus or 0.0)
            names[proc.pid] = proc.name
    # A process followed through the window but idle in it is no name to give: it used under 0.05 CPUs.
    ranked = [(pid, total) for pid, total in totals.items() if total / len(samples) >= NAMED_CPUS_MIN]
    ranked = sorted(ranked, key=lambda item: -item[1])[:5]
    return [{"pid": pid, "name": names[pid], "cpus": round(total / len(samples), 2)} for pid, total in ranked]


def steady_others(samples: list[Sample], own: set[int]) -> list[dict[str, Any]]:
    """Other host processes listed busy in every sample of the window, with their mean CPU use: those
    that kept CPUs busy through the whole figure."""
    if not samples:
        return []
    counts: dict[int, int] = {}
    for sample in samples:
        for pid in {proc.pid for proc in listed_others(sample) if proc.pid not in own}:
            counts[pid] = counts.get(pid, 0) + 1
    steady = {pid for pid, count in counts.items() if count == len(samples)}
    return [proc for proc in busiest_others(samples, own) if proc["pid"] in steady]


def _cpu_limits(hosts: list[HostSample]) -> dict[str, Any]:
    """The CPUs rigcheck may use where fewer than the host's, and other processes' load on them."""
    out: dict[str, Any] = {}
    first = hosts[0]
    if first.cpu_limit:
        out["cpu_limit"] = first.cpu_limit
    # Others' load over the window, not sample by sample: /proc/stat and /proc/PID/stat can count rigcheck's own
    # ticks in neighbouring samples, and clamping each sample's difference at zero only ever adds (a one-CPU set
    # with nothing else on it read 0.05-0.08 CPU, at the floor that makes a figure SUSPECT).
    within = [h for h in hosts if h.set_busy_cpus is not None]
    if first.set_cpus and within:
        others = statistics.fmean(h.set_busy_cpus or 0.0 for h in within) - statistics.fmean(h.own_cpus for h in within)
        out.update(cpu_set_size=first.set_cpus, cpu_set_others_cpus=round(max(0.0, others), 2))
    group_others = [h.group_others_cpus for h in hosts if h.group_others_cpus is not None]
    if first.quota_cpus:
        out["cpu_quota"] = first.quota_cpus
        if group_others:
            out["cpu_quota_others_cpus"] = round(statistics.fmean(group_others), 2)
    return out


def _gpu_others(gpus: list[GpuSample], own: set[int]) -> list[dict[str, Any]]:
    """Other processes on this GPU, with name and memory where the driver reports them."""
    seen: dict[int, dict[str, Any]] = {}
    for gpu in gpus:
        for proc in gpu.processes:
            if proc.pid not in own:
                seen[proc.pid] = {"pid": proc.pid, "name": proc.name, "gpu_memory": proc.gpu_memory}
        for pid in gpu.process_pids:
            if pid not in own and pid not in seen:
                seen[pid] = {"pid": pid, "name": "?", "gpu_memory": None}
    return sorted(seen.values(), key=lambda p: p["pid"])


def summarise(samples: list[Sample], gpu_index: int | None) -> dict[str, Any]:
    """Reduce the samples inside a measurement's window to a few numbers."""
    if not samples:
        return {}
    hosts = [s.host for s in samples]
    own_pids = {pid for h in hosts for pid in h.own_pids}
    out: dict[str, Any] = {
        "samples": len(samples),
        "window_s": round(samples[-1].t - samples[0].t, 3),
        "host_cpus": hosts[0].cpus,
        "host_others_cpus": round(statistics.fmean(h.others_cpus for h in hosts), 2),
        "host_own_cpus": round(statistics.fmean(h.own_cpus for h in hosts), 2),
        "host_load1": max((h.load1 for h in hosts if h.load1 is not None), default=None),
        "host_top_others": busiest_others(samples, own_pids),
        "cpu_mhz_mean": _mean(h.cpu_mhz for h in hosts),
        "cpu_temperature_max_c": max((h.temperature_c for h in hosts if h.temperature_c is not None), default=None),
        "cpu_package_power_w": _mean(h.package_power_w for h in hosts),
        **_cpu_limits(hosts),
    }
    steady = steady_others(samples, own_pids)
    if steady:
        out["host_steady_others"] = steady
    gpus: list[GpuSample] = [g for s in samples for g in s.gpus if g.index == gpu_index]
    if gpus:
        idle_share = sum("idle" in g.throttle for g in gpus) / len(gpus)
        working = [g for g in gpus if "idle" not in g.throttle] or gpus  # a figure's clock is its busy samples'
        clocks = [g.sm_clock_mhz for g in working if g.sm_clock_mhz is not None]
        top = gpus[0].max_sm_clock_mhz
        mean_clock = _mean(clocks)
        mem_clock = _mean(g.mem_clock_mhz for g in gpus)
        mem_top = gpus[0].max_mem_clock_mhz
        others = _gpu_others(gpus, own_pids)
        out.update(
            gpu_index=gpu_index,
            gpu_name=gpus[0].name,
            gpu_pci_bus_id=gpus[0].pci_bus_id,
            sm_clock_mean_mhz=None if mean_clock is None else round(mean_clock, 1),
            sm_clock_min_mhz=min(clocks) if clocks else None,
            sm_clock_max_mhz=top,
            clock_ratio=round(mean_clock / top, 3) if mean_clock and top else None,
            mem_clock_mean_mhz=None if mem_clock is None else round(mem_clock, 1),
            mem_clock_ratio=round(mem_clock / mem_top, 3) if mem_clock and mem_top else None,
            temperature_max_c=max((g.temperature_c for g in gpus if g.temperature_c is not None), default=None),
            power_mean_w=_mean(g.power_w for g in gpus),
            power_limit_w=gpus[0].power_limit_w,
            power_default_limit_w=gpus[0].power_default_limit_w,
            power_max_limit_w=gpus[0].power_max_limit_w,
            gpu_vendor=gpus[0].vendor,
            utilization_mean_pct=_mean(g.utilization_pct for g in gpus),
            throttle=sorted({r for g in gpus for r in g.throttle}),
            idle_share=round(idle_share, 2),
            other_gpu_pids=[p["pid"] for p in others],
            other_gpu_processes=others,
        )
    out["other_processes"] = out.get("other_gpu_processes", []) + out["host_top_others"]
    return out
