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

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rigcheck.engine.events import Measurement
from rigcheck.engine.facts.settings import InForce, affecting, in_force, read_host
from rigcheck.engine.hw.devices import nvml_index
from rigcheck.engine.measure.plausibility import over_limit
from rigcheck.engine.telemetry.sample import Sample
from rigcheck.engine.trust import unseen, unseen_evidence  # [unseen hook]
from rigcheck.engine.trust.clocks import GPU_BUSY_PCT, _judge_clocks, _slowdown_next, _smi, power_limit_state
from rigcheck.engine.trust.policy import DEFAULT_POLICY, TrustPolicy
from rigcheck.engine.trust.summary import (
    NAMED_CPUS_MIN,
    busiest_others,
    gpu_index_for,
    listed_others,
    steady_others,
    summarise,
)

__all__ = [
    "DEFAULT_POLICY",
    "GPU_BUSY_PCT",
    "NAMED_CPUS_MIN",
    "ConditionsAnnotator",
    "Judgement",
    "TrustPolicy",
    "busiest_others",
    "cpu_contention",
    "cpu_pools",
    "gpu_index_for",
    "judge",
    "listed_others",
    "nvml_index",
    "power_limit_state",
    "rest_words",
    "steady_others",
    "summarise",
]

SLOWDOWN_REASONS = {
    "hardware slowdown",
    "software thermal slowdown",
    "hardware thermal slowdown",
    "power brake",
}


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


@dataclass
class Judgement:
    trust: str
    reasons: list[str]
    notes: list[str]
    # The reasons that lie outside the hardware measured (someone else's load, a quota): a figure SUSPECT for
    # one of these can never fail the hardware. A reason added by a rule that does not say is counted outside.
    outside: list[str] = field(default_factory=list)


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
    held: list[str] = []  # the board's own state: heat, power, clocks
    if slowdowns:
        held.append(f"clocks held back by {', '.join(slowdowns)}; next: {_slowdown_next(conditions, slowdowns)}")
    if conditions.get("widened"):
        notes.append("shorter than the telemetry's sampling: clocks not judged (its window held earlier work)")
    else:
        device_timed = params.get("timer") == "events" and not params.get("launch_bound")
        _judge_clocks(conditions, bound, policy, reference_clocks, held, notes, device_timed)
    reasons.extend(held)
    for setting in conditions.get("settings") or []:
        notes.append(f"{setting['name']}={setting['value']} is set: {setting['effect']}")

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
        return Judgement("SUSPECT", reasons, notes, [r for r in reasons if r not in held])
    if conditions.get("samples", 0) < policy.min_samples:
        count, window = conditions.get("samples", 0), conditions.get("window_s", 0.0)
        return Judgement("UNJUDGED", [f"too short to judge: {count} telemetry samples in {window} s"], notes)
    if noisy:
        return Judgement("NOISY", [f"timing spread {spread:.0%} of the median"], notes)
    return Judgement("TRUSTED", [], notes)


ReferenceClocks = Callable[[Measurement], list[float]]


class ConditionsAnnotator:
    """Fills a measurement's conditions and trust verdict from the sampler's ring buffer."""

    def __init__(
        self,
        sampler: Any,
        policy: TrustPolicy = DEFAULT_POLICY,
        reference_clocks: ReferenceClocks | None = None,
        settings: list[InForce] | None = None,
    ) -> None:
        self.sampler = sampler
        self.policy = policy
        self.reference_clocks = reference_clocks
        self.settle_s = sampler.interval * 1.2
        # the stage children inherit this process's environment: its settings are theirs
        self.settings = in_force(os.environ, read_host()) if settings is None else settings

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
        subject = affecting(self.settings, measurement.stage, measurement.device, measurement.params)
        if subject:
            conditions["settings"] = [setting.as_dict() for setting in subject]
        references = None
        if self.reference_clocks is not None and measurement.params.get("gpu_uuid"):
            references = self.reference_clocks(measurement)
        # [unseen hook, issue 31: engine/trust/unseen.py] unseen users, idle holders, a short figure's span clocks
        before = self.sampler.window(start - unseen_evidence.LOOKBACK_S, start)
        conditions.update(unseen_evidence.gather(samples, before, conditions.get("gpu_index"), start))
        found = unseen.examine(conditions, measurement.params, measurement.device)
        conditions.update(found.stored)
        judgement = judge(found.view, measurement, self.policy, references)
        judged_reasons = list(judgement.reasons)
        judgement.trust, judgement.reasons, judgement.notes = unseen.amend(
            judgement.trust, judgement.reasons, judgement.notes, found
        )
        # a GPU user rigcheck cannot see is someone else's load: outside the hardware measured
        judgement.outside = judgement.outside + [r for r in judgement.reasons if r not in judged_reasons]
        # [end unseen hook]
        conditions.update(
            trust=judgement.trust,
            trust_reasons=judgement.reasons,
            trust_outside=judgement.outside,
            notes=judgement.notes,
        )
        return replace(measurement, conditions=conditions)
