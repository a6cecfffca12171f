"""The conditions a figure was measured under (clocks, heat, power, host load, other processes) and
whether to trust it.

The label says what, if anything, was wrong *outside* the measurement:
- BROKEN: the figure is impossible or its two clocks disagree; it is not a result.
- SUSPECT: something outside interfered (other processes on the CPUs it needed or on its GPU, thermal
  or hardware slowdown, a clock far below what this GPU holds for the same work), with the reasons.
- UNJUDGED: too few telemetry samples cover it to say.
- NOISY: nothing interfered, but the repeats spread more than the policy allows.
- TRUSTED: none of these.
Conditions that are normal for the load (a GPU at its power limit) are notes, not reasons.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from rigcheck.engine.events import Measurement
from rigcheck.engine.hw.devices import nvml_index
from rigcheck.engine.measure.plausibility import over_limit
from rigcheck.engine.telemetry.power_limit import power_limit_state as limit_state
from rigcheck.engine.telemetry.sample import GpuSample, HostSample, ProcessUse, Sample, find_gpu
from rigcheck.engine.trust import unseen, unseen_evidence  # [unseen hook]

SLOWDOWN_REASONS = {
    "hardware slowdown",
    "software thermal slowdown",
    "hardware thermal slowdown",
    "power brake",
}
GPU_BUSY_PCT = 50.0


@dataclass(frozen=True)
class TrustPolicy:
    # Other processes interfere with a figure when they and the figure's own threads together want (nearly)
    # every CPU rigcheck may use, and they took a real share of them: the floor. The floor is 5% of the
    # figure's threads, and at least half a CPU on a set of 16 CPUs or more, less on a smaller set (on 2 CPUs
    # one burner that got 0.49 of a CPU halved a 2-thread figure). A process busy through the whole window
    # at 0.4 of a CPU or more (a burner beside a figure on every CPU gets more; a daemon's blips less)
    # counts whatever the floor: one such on 128 CPUs stalls a 128-thread product at every barrier.
    # "Nearly": on a saturated host a thread that has its CPU still shares its core with a busy sibling
    # (an H200 host with 32 burners on 32 CPUs slowed a small-batch GPU figure by 22% at 0.98 of a CPU).
    others_cpus_min: float = 0.5
    floor_full_set_cpus: int = 16  # the set size from which the floor is the whole others_cpus_min
    others_share_of_threads: float = 0.05
    steady_cpus_min: float = 0.4
    saturation_slack_cpus: float = 0.5
    clock_ratio_min: float = 0.85  # SM clock against its maximum, with no cause reported
    power_capped_clock_min: float = 0.90  # at the power cap, a clock this close to its max is the card's normal state
    power_limit_slack: float = 0.01  # a limit this close to the default is the default
    power_capped_clock_floor: float = 0.50  # at the default limit, a clock below this is not the load's doing
    reference_clock_min: float = 0.90  # against this GPU's own earlier clean runs of the same figure
    mem_clock_ratio_min: float = 0.90
    spread_max: float = 0.05  # interquartile range over median
    min_samples: int = 3  # fewer telemetry samples than this cannot judge a figure
    widen_s: float = 1.0  # a short figure's window is widened back to this long

    def floor(self, threads: float, cpus: float) -> float:
        """The least CPU time other processes must take to count, for a figure of `threads` on `cpus`."""
        by_threads = self.others_share_of_threads * min(threads, cpus)
        return max(by_threads, self.others_cpus_min * min(1.0, cpus / self.floor_full_set_cpus))

    def interferes(self, others: float, threads: float, cpus: float, steady: bool = False, quota: bool = False) -> bool:
        """`quota`: the pool is a cgroup's CPU time, not CPUs, so no core is shared with a busy sibling."""
        taken = (steady and others >= self.steady_cpus_min) or others >= self.floor(threads, cpus)
        slack = 0.0 if quota else self.saturation_slack_cpus
        return taken and others + threads > cpus - slack

    def contended(self, others: float, cpus: float, steady: bool = False) -> bool:
        """Busy for a figure that wants every CPU (the CPU arms of the throughput stages do)."""
        return self.interferes(others, cpus, cpus, steady)


DEFAULT_POLICY = TrustPolicy()


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
    set_others = [h.set_others_cpus for h in hosts if h.set_others_cpus is not None]
    if first.set_cpus and set_others:
        out.update(cpu_set_size=first.set_cpus, cpu_set_others_cpus=round(statistics.fmean(set_others), 2))
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


def _named(processes: list[dict[str, Any]], key: str, fmt: Callable[[Any], str]) -> str:
    parts = []
    for proc in processes[:3]:
        amount = proc.get(key)
        parts.append(f"{proc['name']} (pid {proc['pid']}" + (f", {fmt(amount)})" if amount else ")"))
    return ", ".join(parts)


def _size(count: float) -> str:
    return f"{count / 2**30:.1f} GiB" if count >= 2**30 else f"{count / 2**20:.0f} MiB"


def cpu_pools(conditions: dict[str, Any]) -> list[tuple[float, float, str, bool]]:
    """The pools of CPUs a figure's threads compete for, each as (other processes' load on it, its size,
    its name, whether it can name the busiest): the CPUs rigcheck may run on (the host's where nothing
    narrows them) and, under a cgroup quota, the quota that rigcheck's cgroup shares."""
    pools: list[tuple[float, float, str, bool]] = []
    set_size, set_others = conditions.get("cpu_set_size"), conditions.get("cpu_set_others_cpus")
    cpus, others = conditions.get("host_cpus"), conditions.get("host_others_cpus")
    if set_size and set_others is not None:
        pools.append((set_others, set_size, f"kept {set_others:.1f} of rigcheck's {set_size} CPUs busy", True))
    elif cpus and others is not None:
        pools.append((others, cpus, f"kept {others:.1f} of {cpus} CPUs busy", True))
    quota, quota_others = conditions.get("cpu_quota"), conditions.get("cpu_quota_others_cpus")
    if quota and quota_others is not None:
        words = f"in rigcheck's cgroup used {quota_others:.1f} of its CPU quota of {quota:g}"
        pools.append((quota_others, quota, words, False))
    return pools


def cpu_contention(conditions: dict[str, Any], threads: float, policy: TrustPolicy = DEFAULT_POLICY) -> list[str]:
    """Why other processes' CPU load interfered with a figure of `threads` threads, one reason per pool."""
    reasons = []
    steady = conditions.get("host_steady_others") or []
    kept_busy = any((p.get("cpus") or 0.0) >= policy.steady_cpus_min for p in steady)
    for others, size, words, named in cpu_pools(conditions):
        if not policy.interferes(others, threads, size, kept_busy and named, quota=not named):
            continue
        listed = conditions.get("host_top_others", [])
        busiest = _named(listed, "cpus", lambda c: f"{c:.1f} CPUs") if named else ""
        if busiest and size == conditions.get("host_cpus"):  # the host's own pool: its processes add up to it
            busiest += rest_words(others, [p.get("cpus") or 0.0 for p in listed[:3]])
        reasons.append(
            f"other processes {words} while this figure needed {threads:g}"
            + (f": {busiest}" if busiest else "")
            + "; next: stop them, or rerun with `--wait-quiet`"
        )
    return reasons


def rest_words(total: float, named: list[float]) -> str:
    """What the named processes leave of the total (from the same samples): `, the rest 0.3 CPUs`."""
    rest = total - sum(named)
    return f", the rest {rest:.1f} CPUs" if rest >= 0.05 else ""


def _smi(conditions: dict[str, Any], nvidia: str, amd: str) -> str:
    """The vendor's command for the next step."""
    return amd if str(conditions.get("gpu_vendor") or "").upper() == "AMD" else nvidia


def _slowdown_next(conditions: dict[str, Any], slowdowns: list[str]) -> str:
    if any("thermal" in r for r in slowdowns):
        command = _smi(conditions, "nvidia-smi -q -d PERFORMANCE,TEMPERATURE", "rocm-smi --showtemp --showperflevel")
        return f"`{command}`; check the fans, the airflow and the inlet temperature"
    command = _smi(conditions, "nvidia-smi -q -d PERFORMANCE", "rocm-smi --showperflevel")
    return f"`{command}`; a hardware slowdown or power brake comes from the board or the chassis (power supply, BMC)"


@dataclass
class Judgement:
    trust: str
    reasons: list[str]
    notes: list[str]


def judge(
    conditions: dict[str, Any],
    measurement: Measurement,
    policy: TrustPolicy | None = None,
    reference_clocks: list[float] | None = None,
) -> Judgement:
    """BROKEN, SUSPECT, UNJUDGED, NOISY or TRUSTED, with the reasons and the notes in words."""
    policy = policy or DEFAULT_POLICY
    params = measurement.params
    bound = params.get("bound", "compute")
    reasons: list[str] = []
    notes: list[str] = []
    broken = params.get("broken") or over_limit(
        measurement.value, measurement.unit, params.get("limit"), str(params.get("limit_basis") or "")
    )
    if broken:
        return Judgement("BROKEN", [str(broken)], notes)

    threads = int(params.get("threads") or 1)
    reasons.extend(cpu_contention(conditions, threads, policy))
    quota = conditions.get("cpu_quota")
    if quota and threads > quota:
        reasons.append(
            f"this figure's {threads} threads share a cgroup CPU quota of {quota:g} CPUs: the quota, not the CPUs, "
            "set its pace; next: `cat /sys/fs/cgroup/cpu.max` (v1: cpu.cfs_quota_us), raise the quota or run "
            "fewer threads"
        )
    if conditions.get("cpu_limit"):
        notes.append(str(conditions["cpu_limit"]))
    if conditions.get("other_gpu_processes"):
        procs = conditions["other_gpu_processes"]
        reasons.append(
            f"{len(procs)} other process(es) on the GPU: "
            + _named(procs, "gpu_memory", _size)
            + f"; next: `{_smi(conditions, 'nvidia-smi', 'rocm-smi --showpids')}` lists them: stop them or use "
            "another GPU"
        )
    throttle = conditions.get("throttle", [])
    slowdowns = [r for r in throttle if r in SLOWDOWN_REASONS]
    if slowdowns:
        reasons.append(f"clocks held back by {', '.join(slowdowns)}; next: {_slowdown_next(conditions, slowdowns)}")
    if conditions.get("widened"):
        notes.append("shorter than the telemetry's sampling: clocks not judged (its window held earlier work)")
    else:
        device_timed = params.get("timer") == "events" and not params.get("launch_bound")
        _judge_clocks(conditions, bound, policy, reference_clocks, reasons, notes, device_timed)

    spread = params.get("spread_rel")
    if spread is None and measurement.spread is not None and measurement.value:
        spread = measurement.spread / abs(measurement.value)
    noisy = spread is not None and spread > policy.spread_max
    if params.get("launch_bound"):
        per_call = params.get("median_s") or 0.0
        notes.append(f"launch-bound: one call takes {per_call * 1e6:.1f} us, near the host's launch overhead")
    if reasons:
        if noisy:
            notes.append(f"timing spread {spread:.0%} of the median")
        return Judgement("SUSPECT", reasons, notes)
    if conditions.get("samples", 0) < policy.min_samples:
        count, window = conditions.get("samples", 0), conditions.get("window_s", 0.0)
        return Judgement("UNJUDGED", [f"too short to judge: {count} telemetry samples in {window} s"], notes)
    if noisy:
        return Judgement("NOISY", [f"timing spread {spread:.0%} of the median"], notes)
    return Judgement("TRUSTED", [], notes)


def power_limit_state(conditions: dict[str, Any], policy: TrustPolicy = DEFAULT_POLICY) -> str:
    """ "default", "lowered" or "unknown": the enforced power limit against the board's default and maximum."""
    return limit_state(
        conditions.get("power_limit_w"),
        conditions.get("power_default_limit_w"),
        conditions.get("power_max_limit_w"),
        policy.power_limit_slack,
    )


def _judge_clocks(
    conditions: dict[str, Any],
    bound: str,
    policy: TrustPolicy,
    reference_clocks: list[float] | None,
    reasons: list[str],
    notes: list[str],
    device_timed: bool = False,
) -> None:
    """Clock and power: SUSPECT only when the clock is low for a reason outside the load itself. A GPU held
    at its power cap is the normal state of a heavy load when the limit is the board's default (an H200
    holds about 1,470 of 1,980 MHz on a bf16 8192 product at 700 W); a lowered limit is not."""
    ratio = conditions.get("clock_ratio")
    throttle = conditions.get("throttle", [])
    power, power_limit = conditions.get("power_mean_w"), conditions.get("power_limit_w")
    default = conditions.get("power_default_limit_w")
    capped = "power cap" in throttle
    at = f"{power:.0f} of {power_limit:.0f} W" if power and power_limit else "its power limit"
    state = power_limit_state(conditions, policy)
    lowered = ""
    if state == "lowered":
        lowered = f"power limit lowered to {power_limit:.0f} W, below this board's default {default:.0f} W"
        notes.append(lowered)
    if bound != "compute" or ratio is None:
        if capped:
            notes.append(f"power-limited at {at}, which does not slow a {bound}-bound figure")
        mem_ratio = conditions.get("mem_clock_ratio")
        if bound == "memory" and mem_ratio is not None and mem_ratio < policy.mem_clock_ratio_min:
            command = _smi(conditions, "nvidia-smi -q -d CLOCK,PERFORMANCE", "rocm-smi --showclocks")
            reasons.append(f"memory clock at {mem_ratio:.0%} of max; next: `{command}`")
        return
    # NVML's utilization lags short bursts (an event-timed matmul read 15%): device-timed work is busy by construction
    busy = device_timed or (conditions.get("utilization_mean_pct") or 0.0) >= GPU_BUSY_PCT
    mean = conditions.get("sm_clock_mean_mhz")
    if reference_clocks and mean and busy:
        reference = statistics.median(reference_clocks)
        if mean < policy.reference_clock_min * reference:
            command = _smi(conditions, "nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE", "rocm-smi")
            reasons.append(
                f"SM clock {mean:,.0f} MHz, below the {reference:,.0f} MHz this GPU held for the same figure "
                f"in {len(reference_clocks)} earlier clean run(s); next: `{command}`, and `rigcheck compare` "
                "with the earlier run"
            )
            return
    if capped and ratio >= policy.power_capped_clock_min:
        notes.append(f"power-limited at {at} with the SM clock at {ratio:.0%} of max: normal for this load")
    elif capped and busy and state == "default" and ratio >= policy.power_capped_clock_floor:
        notes.append(
            f"power-limited at {power_limit:.0f} W, as this load is on this board "
            f"(SM clock at {ratio:.0%} of max, {at})"
        )
    elif capped and busy and state == "lowered":
        notes.remove(lowered)
        reasons.append(
            f"SM clock at {ratio:.0%} of max under a power limit lowered to {power_limit:.0f} W, below this "
            f"board's default {default:.0f} W ({at}); next: `sudo nvidia-smi -pl {default:.0f}` restores it"
        )
    elif capped and busy and state == "default":
        reasons.append(
            f"SM clock at {ratio:.0%} of max under the power cap at the board's default limit ({at}): far below "
            "what a power-limited board holds; next: `nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE`"
        )
    elif capped and busy:
        reasons.append(
            f"SM clock at {ratio:.0%} of max under the power cap ({at}), and the board's default power limit "
            "could not be read to rule out a lowered one; next: `nvidia-smi -q -d POWER`"
        )
    elif ratio < policy.clock_ratio_min and busy and conditions.get("idle_share", 0.0) < 0.5:
        cause = ", ".join(r for r in throttle if r != "idle") or "no reason reported"
        command = _smi(conditions, "nvidia-smi -q -d PERFORMANCE,CLOCK", "rocm-smi --showperflevel --showclocks")
        reasons.append(f"SM clock at {ratio:.0%} of max: {cause}; next: `{command}` (locked or application clocks?)")


ReferenceClocks = Callable[[Measurement], list[float]]


class ConditionsAnnotator:
    """Fills a measurement's conditions and trust verdict from the sampler's ring buffer."""

    def __init__(
        self, sampler: Any, policy: TrustPolicy = DEFAULT_POLICY, reference_clocks: ReferenceClocks | None = None
    ) -> None:
        self.sampler = sampler
        self.policy = policy
        self.reference_clocks = reference_clocks
        self.settle_s = sampler.interval * 1.2

    def window(self, start: float, end: float) -> tuple[list[Sample], bool]:
        """The samples inside [start, end], and whether the window was too short to hold enough and was
        widened back in time (then it holds the work before the figure too)."""
        samples = self.sampler.window(start, end)
        if len(samples) < self.policy.min_samples and end - start < self.policy.widen_s:
            return self.sampler.window(end - self.policy.widen_s, end), True
        return samples, False

    def __call__(self, measurement: Measurement) -> Measurement:
        end = measurement.t
        if time.time() < end + self.settle_s:
            time.sleep(max(0.0, end + self.settle_s - time.time()))  # let the closing sample land
        start = measurement.t_start if measurement.t_start is not None else end
        samples, widened = self.window(start, end)
        conditions = summarise(samples, gpu_index_for(measurement, samples))
        if not conditions:
            conditions = {"samples": 0, "window_s": 0.0}
        conditions["widened"] = widened
        references = None
        if self.reference_clocks is not None and measurement.params.get("gpu_uuid"):
            references = self.reference_clocks(measurement)
        # [unseen hook, issue 31: engine/trust/unseen.py] unseen users, idle holders, a short figure's span clocks
        before = self.sampler.window(start - unseen_evidence.LOOKBACK_S, start)
        conditions.update(unseen_evidence.gather(samples, before, conditions.get("gpu_index"), start))
        found = unseen.examine(conditions, measurement.params, measurement.device)
        conditions.update(found.stored)
        judgement = judge(found.view, measurement, self.policy, references)
        judgement.trust, judgement.reasons, judgement.notes = unseen.amend(
            judgement.trust, judgement.reasons, judgement.notes, found
        )
        # [end unseen hook]
        conditions.update(trust=judgement.trust, trust_reasons=judgement.reasons, notes=judgement.notes)
        return replace(measurement, conditions=conditions)
