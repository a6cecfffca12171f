"""What the driver says about a GPU's other users that rigcheck's own process lists cannot: memory no listed
process accounts for, pids this PID namespace cannot resolve, per-process SM use, and the GPU's readings at
the latest moment before a figure when rigcheck had no work on it. Plain values for a figure's conditions;
engine/trust/unseen.py judges them."""

from __future__ import annotations

import bisect
import statistics
from collections.abc import Iterable
from typing import Any

from rigcheck.engine.telemetry.sample import GpuSample, Sample

LOOKBACK_S = 120.0  # how far before a figure to look for a moment when rigcheck had no work on its GPU
SETTLE_S = 1.2  # utilization and per-process samples average over up to a second: keep this far from own work
KEEP = 5  # the latest this many idle samples describe the GPU "before the figure"
WORKED_SM_PCT = 1.0  # a process sampled at this much SM use or more did work


def _gpus(samples: Iterable[Sample], index: int | None) -> list[tuple[float, GpuSample]]:
    return [(s.t, g) for s in samples for g in s.gpus if g.index == index]


def own_pids(samples: Iterable[Sample]) -> set[int]:
    return {pid for s in samples for pid in s.host.own_pids}


def rigcheck_working(gpu: GpuSample, own: set[int]) -> bool:
    """Whether rigcheck may have had work on this GPU at this sample: it holds a process there, and the
    driver's per-process SM use does not show that process idle over the last second."""
    mine = [p.pid for p in gpu.processes if p.pid in own]
    if not mine:
        return False
    if gpu.sm_by_pid is None:
        return True  # a context is there and nothing says it was idle
    sm = dict(gpu.sm_by_pid)
    return any(sm.get(pid, 0.0) > 0.0 for pid in mine)


def _far(t: float, busy_at: list[float]) -> bool:
    """At least SETTLE_S from every time in the sorted `busy_at`."""
    at = bisect.bisect_left(busy_at, t)
    return all(abs(t - busy_at[i]) >= SETTLE_S for i in (at - 1, at) if 0 <= i < len(busy_at))


def idle_before(samples: list[Sample], index: int | None, own: set[int], until: float) -> dict[str, Any] | None:
    """The GPU's utilization and power at the latest samples before `until` when rigcheck had no work on
    it, at least SETTLE_S from any sample where it may have had: None where no such moment was sampled."""
    readings = [(t, gpu, rigcheck_working(gpu, own)) for t, gpu in _gpus((s for s in samples if s.t <= until), index)]
    busy_at = sorted(t for t, _, working in readings if working)
    idle = [
        (t, gpu)
        for t, gpu, working in readings
        if not working and until - t >= SETTLE_S and gpu.utilization_pct is not None and _far(t, busy_at)
    ][-KEEP:]
    if not idle:
        return None
    utilization = [float(gpu.utilization_pct or 0.0) for _, gpu in idle]
    power = [gpu.power_w for _, gpu in idle if gpu.power_w is not None]
    return {
        "samples": len(idle),
        "age_s": round(until - idle[-1][0], 1),
        "utilization_pct": round(statistics.fmean(utilization), 1),
        "utilization_max_pct": max(utilization),
        "power_w": round(statistics.fmean(power), 1) if power else None,
    }


def unseen_processes(gpus: list[GpuSample], own: set[int]) -> list[dict[str, Any]]:
    """Processes on this GPU that this PID namespace cannot resolve: listed by the driver with a pid
    that is not here, or sampled at work by the driver under a pid in no process list."""
    found: dict[int, dict[str, Any]] = {}
    for gpu in gpus:
        listed = {p.pid for p in gpu.processes}
        for proc in gpu.processes:
            if proc.pid in gpu.unseen_pids and proc.pid not in own:
                entry = found.setdefault(proc.pid, {"pid": proc.pid, "gpu_memory": None, "sm_pct": None})
                entry["listed"] = True
                if proc.gpu_memory is not None:
                    entry["gpu_memory"] = max(entry["gpu_memory"] or 0, proc.gpu_memory)
        for pid, sm in gpu.sm_by_pid or ():
            if pid in own or (pid in listed and pid not in found):
                continue
            entry = found.setdefault(pid, {"pid": pid, "gpu_memory": None, "sm_pct": None, "listed": False})
            entry["sm_pct"] = max(entry["sm_pct"] or 0.0, sm)
    return sorted(found.values(), key=lambda p: p["pid"])


def others_sm(gpus: list[GpuSample], own: set[int]) -> list[dict[str, Any]] | None:
    """Each listed other process's highest SM use across the samples where the driver gave per-process
    use (a process it did not sample did no work then), and in how many of them; None where it never did."""
    read = [gpu for gpu in gpus if gpu.sm_by_pid is not None]
    if not read:
        return None
    highest: dict[int, float] = {}
    for gpu in read:
        sm = dict(gpu.sm_by_pid or ())
        for proc in gpu.processes:
            if proc.pid not in own:
                highest[proc.pid] = max(highest.get(proc.pid, 0.0), sm.get(proc.pid, 0.0))
    return [{"pid": pid, "sm_pct": value, "reads": len(read)} for pid, value in sorted(highest.items())]


def gather(window: list[Sample], before: list[Sample], index: int | None, start: float) -> dict[str, Any]:
    """The new condition keys (see engine/trust/unseen.py) for a figure on GPU `index` whose window holds
    `window` and that started at `start`; `before` are the samples of the LOOKBACK_S before it."""
    if index is None:
        return {}
    own = own_pids(window) | own_pids(before)
    gpus = [gpu for _, gpu in _gpus(window, index)]
    if not gpus or any(gpu.source != "nvml" for gpu in gpus):
        return {}  # only NVML lists a GPU's processes: elsewhere rigcheck's own work cannot be told from others'
    out: dict[str, Any] = {}
    unlisted = [gpu.memory_unlisted for gpu in gpus if gpu.memory_unlisted is not None]
    if unlisted:
        out["gpu_unlisted_memory"] = min(unlisted)  # a read between an allocation and the list is no process
    unseen = unseen_processes(gpus, own)
    if unseen:
        out["gpu_unseen_processes"] = unseen
    sm = others_sm(gpus, own)
    if sm is not None:
        out["gpu_others_sm"] = sm
    if not any(p.pid in own for gpu in gpus for p in gpu.processes):
        # rigcheck's own stage child worked on this GPU, yet no list shows it: the driver hides this PID
        # namespace (as in many containers), so memory outside the lists and busy moments may be its own
        out["gpu_list_blind"] = True
        return out
    idle = idle_before(before, index, own, start)
    if idle is not None:
        out["gpu_idle_before"] = idle
    return out


def _size(count: float) -> str:
    return f"{count / 2**30:.1f} GiB" if count >= 2**30 else f"{count / 2**20:.0f} MiB"


def gpu_users(samples: list[Sample], indexes: set[int], unlisted_min: int) -> list[str]:
    """Every other user of these GPUs (by NVML index) in the samples, in words, busy or only holding memory:
    named before a stage, since one that holds memory may start work at any moment."""
    own = own_pids(samples)
    words = []
    for index in sorted(indexes):
        gpus = [gpu for _, gpu in _gpus(samples, index)]
        if not gpus:
            continue
        last = gpus[-1]
        sm = dict(last.sm_by_pid) if last.sm_by_pid is not None else None
        parts = []
        for proc in last.processes:
            if proc.pid in own:
                continue
            held = f" holds {_size(proc.gpu_memory)}" if proc.gpu_memory else ""
            use = "" if sm is None else f", SM {sm.get(proc.pid, 0.0):.0f}% in the last second"
            who = "a process in another PID namespace" if proc.pid in last.unseen_pids else proc.name
            parts.append(f"{who} (pid {proc.pid}){held}{use}")
        unlisted = [gpu.memory_unlisted for gpu in gpus if gpu.memory_unlisted is not None]
        mine_listed = any(p.pid in own for p in last.processes)  # else the memory may be rigcheck's own
        if mine_listed and unlisted and min(unlisted) >= unlisted_min:
            parts.append(
                f"a process that rigcheck cannot see (another container or PID namespace) holds {_size(min(unlisted))}"
            )
        if parts:
            words.append(f"GPU {index} ({last.pci_bus_id or last.name}): " + "; ".join(parts))
    return words
