"""The one judge of a figure: its trust, its reasons and whether they lie outside the hardware, decided in one call.

Everything that bears on the label is an input, not a later edit: the conditions, the figure itself, the clocks
this GPU held before, what rigcheck could not see directly (engine/trust/unseen.py's findings) and the other runs
that shared the device (`--force`). The label:
- BROKEN: the figure is impossible or its two clocks disagree; it is not a result.
- SUSPECT: something outside interfered (other processes on the CPUs it needed or on its GPU, another run on its
  device, thermal or hardware slowdown, a clock far below what this GPU holds for the same work), with the reasons.
- UNJUDGED: too few telemetry samples cover it to say.
- NOISY: nothing interfered, but the repeats spread more than the policy allows.
- TRUSTED: none of these.
Conditions that are normal for the load (a GPU at its power limit) are notes, not reasons.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rigcheck.engine.events import Measurement, Trust
from rigcheck.engine.hw.throttle import SLOWDOWN_REASONS
from rigcheck.engine.measure.plausibility import over_limit
from rigcheck.engine.trust.clocks import _judge_clocks, _slowdown_next, _smi
from rigcheck.engine.trust.cpu_load import _named, _size, cpu_contention
from rigcheck.engine.trust.judgement import (
    BROKEN,
    CLOCKS,
    CPU_QUOTA,
    GPU_PROCESSES,
    SHARED_RUN,
    SLOWDOWN,
    SPREAD,
    TOO_SHORT,
    UNSEEN_USER,
    Judgement,
    Reason,
)
from rigcheck.engine.trust.policy import DEFAULT_POLICY, TrustPolicy
from rigcheck.engine.trust.unseen import Findings

__all__ = ["SLOWDOWN_REASONS", "judge", "judge_untimed", "shared_reason"]


def shared_reason(runs: Sequence[int]) -> Reason:
    """Another rigcheck run used the figure's device at the same time (only with --force): someone else's load."""
    text = f"run(s) {', '.join(map(str, runs))} used the same device at the same time (--force)"
    return Reason(text, SHARED_RUN, True, {}, [f"run {r}" for r in runs])


def _own_rules(
    conditions: dict[str, Any], measurement: Measurement, policy: TrustPolicy, reference_clocks: list[float] | None
) -> Judgement:
    """The label from the conditions and the figure alone."""
    params = measurement.params
    bound = params.get("bound", "compute")
    reasons: list[Reason] = []
    notes: list[str] = []
    broken = params.get("broken") or over_limit(
        measurement.value, measurement.unit, params.get("limit"), str(params.get("limit_basis") or "")
    )
    if broken:
        return Judgement(Trust.BROKEN, [Reason(str(broken), BROKEN)], notes)

    threads = int(params.get("threads") or 1)
    reasons.extend(cpu_contention(conditions, threads, policy))
    quota = conditions.get("cpu_quota")
    if quota and threads > quota:
        text = (
            f"this figure's {threads} threads share a cgroup CPU quota of {quota:g} CPUs: the quota, not the CPUs, "
            "set its pace; next: `cat /sys/fs/cgroup/cpu.max` (v1: cpu.cfs_quota_us), raise the quota or run "
            "fewer threads"
        )
        reasons.append(Reason(text, CPU_QUOTA, True, {"threads": float(threads), "quota_cpus": float(quota)}))
    if conditions.get("cpu_limit"):
        notes.append(str(conditions.get("cpu_limit")))
    procs = conditions.get("other_gpu_processes") or []
    if procs:
        text = (
            f"{len(procs)} other process(es) on the GPU: "
            + _named(procs, "gpu_memory", _size)
            + f"; next: `{_smi(conditions, 'nvidia-smi', 'rocm-smi --showpids')}` lists them: stop them or use "
            "another GPU"
        )
        involved = [f"{p.get('name')} (pid {p.get('pid')})" for p in procs]
        reasons.append(Reason(text, GPU_PROCESSES, True, {"processes": float(len(procs))}, involved))
    throttle = conditions.get("throttle", [])
    slowdowns = [r for r in throttle if r in SLOWDOWN_REASONS]
    held: list[str] = []  # the board's own state: heat, power, clocks
    if slowdowns:
        text = f"clocks held back by {', '.join(slowdowns)}; next: {_slowdown_next(conditions, slowdowns)}"
        reasons.append(Reason(text, SLOWDOWN, False, {}, slowdowns))
    if conditions.get("widened"):
        notes.append("shorter than the telemetry's sampling: clocks not judged (its window held earlier work)")
    else:
        device_timed = params.get("timer") == "events" and not params.get("launch_bound")
        _judge_clocks(conditions, bound, policy, reference_clocks, held, notes, device_timed)
    read = {k: conditions.get(k) for k in ("clock_ratio", "mem_clock_ratio", "sm_clock_mean_mhz")}
    numbers = {k: float(v) for k, v in read.items() if isinstance(v, (int, float))}
    reasons.extend(Reason(text, CLOCKS, False, numbers) for text in held)
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
        return Judgement(Trust.SUSPECT, reasons, notes)
    if conditions.get("samples", 0) < policy.min_samples:
        count, window = conditions.get("samples", 0), conditions.get("window_s", 0.0)
        text = f"too short to judge: {count} telemetry samples in {window} s"
        return Judgement(Trust.UNJUDGED, [Reason(text, TOO_SHORT, False, {"samples": float(count)})], notes)
    if noisy and spread is not None:
        text = f"timing spread {spread:.0%} of the median"
        return Judgement(Trust.NOISY, [Reason(text, SPREAD, False, {"spread_rel": float(spread)})], notes)
    return Judgement(Trust.TRUSTED, [], notes)


def judge(
    conditions: dict[str, Any],
    measurement: Measurement,
    policy: TrustPolicy | None = None,
    reference_clocks: list[float] | None = None,
    unseen: Findings | None = None,
    shared_runs: Sequence[int] = (),
) -> Judgement:
    """BROKEN, SUSPECT, UNJUDGED, NOISY or TRUSTED, with the reasons (structured) and the notes.

    `unseen`: what engine/trust/unseen.py found that rigcheck cannot see directly; `shared_runs`: the other runs that
    used this figure's device at the same time (--force). Each is someone else's load: a reason outside the hardware
    makes any label but BROKEN SUSPECT (an UNJUDGED or NOISY label's own words become notes); beside a BROKEN figure
    it is a note (the figure is no result either way)."""
    found = _own_rules(conditions, measurement, policy or DEFAULT_POLICY, reference_clocks)
    outside = [Reason(text, UNSEEN_USER, True) for text in (unseen.reasons if unseen else [])]
    if shared_runs:
        outside.append(shared_reason(shared_runs))
    notes = found.notes + (unseen.notes if unseen else [])
    if not outside:
        return Judgement(found.trust, found.reasons, notes)
    if found.trust == Trust.BROKEN:
        return Judgement(found.trust, found.reasons, notes + [r.text for r in outside])
    if found.trust == Trust.SUSPECT:
        return Judgement(found.trust, found.reasons + outside, notes)
    return Judgement(Trust.SUSPECT, outside, notes + [r.text for r in found.reasons])


def judge_untimed(shared_runs: Sequence[int]) -> Judgement | None:
    """A figure no telemetry covered has no trust of its own; another run on its device still makes it SUSPECT."""
    return Judgement(Trust.SUSPECT, [shared_reason(shared_runs)]) if shared_runs else None
