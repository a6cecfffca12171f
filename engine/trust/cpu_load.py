"""Other processes' CPU load against the CPUs a figure's threads needed: the pools they compete for, and a reason
(structured: engine/trust/judgement.py) for each pool that interfered."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rigcheck.engine.trust.judgement import CPU_LOAD, CPU_QUOTA, Reason
from rigcheck.engine.trust.policy import DEFAULT_POLICY, TrustPolicy


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


def cpu_contention(conditions: dict[str, Any], threads: float, policy: TrustPolicy = DEFAULT_POLICY) -> list[Reason]:
    """Why other processes' CPU load interfered with a figure of `threads` threads, one reason per pool."""
    reasons: list[Reason] = []
    steady = conditions.get("host_steady_others") or []
    kept_busy = any((p.get("cpus") or 0.0) >= policy.steady_cpus_min for p in steady)
    for others, size, words, named in cpu_pools(conditions):
        if not policy.interferes(others, threads, size, kept_busy and named, quota=not named):
            continue
        listed = conditions.get("host_top_others", [])
        busiest = _named(listed, "cpus", lambda c: f"{c:.1f} CPUs") if named else ""
        if busiest and size == conditions.get("host_cpus"):  # the host's own pool: its processes add up to it
            busiest += rest_words(others, [p.get("cpus") or 0.0 for p in listed[:3]])
        text = (
            f"other processes {words} while this figure needed {threads:g}"
            + (f": {busiest}" if busiest else "")
            + "; next: stop them, or rerun with `--wait-quiet`"
        )
        involved = [f"{p.get('name')} (pid {p.get('pid')})" for p in listed[:3]] if named else []
        numbers = {"others_cpus": float(others), "pool_cpus": float(size), "threads": float(threads)}
        reasons.append(Reason(text, CPU_LOAD if named else CPU_QUOTA, True, numbers, involved))
    return reasons


def rest_words(total: float, named: list[float]) -> str:
    """What the named processes leave of the total (from the same samples): `, the rest 0.3 CPUs`."""
    rest = total - sum(named)
    return f", the rest {rest:.1f} CPUs" if rest >= 0.05 else ""
