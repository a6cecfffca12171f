"""Judging a figure by what rigcheck cannot see directly: another container's process on its GPU, a process
that only holds memory, and the clocks read at the figure's own span. Pure functions on plain values.

Condition keys this adds (gathered by engine/trust/unseen_evidence.py and engine/stages/common/span_clocks.py):
- `gpu_unlisted_memory`: bytes of device memory in use that no listed process accounts for, the least over
  the figure's window (NVML's v2 `used` less every listed process's memory); absent where it cannot be told.
- `gpu_unseen_processes`: [{pid, gpu_memory, sm_pct, listed}] processes the driver lists (`listed`) or only
  samples at work on the GPU under a pid this PID namespace cannot resolve.
- `gpu_others_sm`: [{pid, sm_pct, reads}] each listed other process's highest per-process SM use in the
  window, over `reads` samples in which the driver gave it; absent where the driver never gave it.
- `gpu_idle_before`: {samples, age_s, utilization_pct, utilization_max_pct, power_w[, source]}: the GPU at the
  latest moment before the figure when rigcheck had no work on it (`age_s` before the figure): from the
  sampler, or (`source` "stage child") from the child's idle probe (`span_clocks.idle_probe` in the figure's
  params), whichever is fresher; the probe also works where the driver's lists hide this PID namespace.
- `gpu_idle_holders`: [{pid, name, gpu_memory, evidence}] other processes that held GPU memory but did no
  work in the figure's window: noted, not a reason (they stay in `other_gpu_processes`).
- `gpu_list_blind`: True where no process list showed rigcheck's own stage child on the GPU in the figure's
  window (the driver hides this PID namespace): unlisted memory and busy moments are then not evidence.
- `unseen_user`: {gpu_memory, worked, evidence}: another user rigcheck cannot see; `worked` is True, False or
  None (no evidence either way).
- `clocks_from`: "span" where the figure was shorter than the telemetry's sampling and its clocks, power
  and clock-event reasons were judged from the readings at its timed span's start and end (`span_clocks`
  in its params) instead of a widened window; the clock fields then hold the span's readings.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rigcheck.engine.trust.view import Conditions

UNLISTED_MIN = (
    256 * 2**20
)  # unlisted memory below this is the driver's bookkeeping, not a process (a context is ~500 MiB)
BUSY_PCT = 50.0  # the GPU this busy while rigcheck had no work on it: someone else worked
IDLE_PCT = 5.0  # and this idle: no one did
IDLE_SAMPLES_MIN = 2
WORKED_SM_PCT = 1.0


def _size(count: float) -> str:
    return f"{count / 2**30:.1f} GiB" if count >= 2**30 else f"{count / 2**20:.0f} MiB"


def _before_words(idle: Mapping[str, Any]) -> str:
    power = f", {idle['power_w']:.0f} W" if idle.get("power_w") is not None else ""
    return (
        f"GPU busy {idle['utilization_pct']:.0f}%{power} while rigcheck had no work on it, "
        f"{idle['age_s']:.0f} s before this figure"
    )


def idle_before_state(conditions: dict[str, Any]) -> str:
    """ "busy", "idle" or "unknown": the GPU at the latest moment before the figure when rigcheck had no work."""
    idle = conditions.get("gpu_idle_before")
    if not idle or idle.get("samples", 0) < IDLE_SAMPLES_MIN:
        return "unknown"
    if idle["utilization_pct"] >= BUSY_PCT:
        return "busy"
    return "idle" if idle["utilization_max_pct"] <= IDLE_PCT else "unknown"


def unseen_user(conditions: dict[str, Any]) -> dict[str, Any] | None:
    """Another user of the GPU that rigcheck cannot see, with whether it worked and the evidence."""
    unlisted = 0 if conditions.get("gpu_list_blind") else conditions.get("gpu_unlisted_memory") or 0
    # A pid sampled at work but in no list counts only beside memory no listed process holds: a process that
    # works holds a context, and where every byte is accounted for it is likely a listed one, numbered as
    # outside this namespace.
    unseen = [
        p for p in conditions.get("gpu_unseen_processes") or [] if p.get("listed", True) or unlisted >= UNLISTED_MIN
    ]
    memory = max(unlisted, sum(p.get("gpu_memory") or 0 for p in unseen))
    state, idle = idle_before_state(conditions), Conditions.from_dict(conditions).gpu_idle_before
    sm = {p["pid"]: p for p in conditions.get("gpu_others_sm") or []}
    visible_workers = [
        p
        for p in conditions.get("other_gpu_processes") or []
        if p["pid"] not in _pids(unseen) and not _sampled_idle(sm.get(p["pid"]))
    ]
    held = unlisted >= UNLISTED_MIN or bool(unseen)
    # Busy while rigcheck was idle, and no visible process to name for it: someone unseen worked.
    busy_unnamed = state == "busy" and not visible_workers
    if not held and not busy_unnamed:
        return None
    sampled = [p for p in unseen if (p.get("sm_pct") or 0.0) >= WORKED_SM_PCT]
    evidence: list[str] = []
    if sampled:
        evidence.append(f"SM use {max(p['sm_pct'] for p in sampled):.0f}% (pid {sampled[0]['pid']})")
    if state == "busy" and idle is not None:  # (busy: the GPU was read before the figure)
        evidence.append(_before_words(idle))
    if evidence:
        return {"gpu_memory": memory, "worked": True, "evidence": "; ".join(evidence)}
    listed_idle = [_sampled_idle(sm.get(p["pid"])) for p in unseen]
    if unlisted < UNLISTED_MIN and listed_idle and all(listed_idle):
        reads = sm[unseen[0]["pid"]]["reads"]
        return {"gpu_memory": memory, "worked": False, "evidence": f"SM use 0% in {reads} per-process sample(s)"}
    if state == "idle" and idle is not None:
        words = f"GPU idle ({idle['utilization_max_pct']:.0f}%) while rigcheck had no work on it"
        words += f", {idle['age_s']:.0f} s before"
        return {"gpu_memory": memory, "worked": False, "evidence": words}
    return {"gpu_memory": memory, "worked": None, "evidence": "no per-process use and no idle moment before the figure"}


def _sampled_idle(use: dict[str, Any] | None) -> bool:
    """Per-process SM use was read in the window and never reached WORKED_SM_PCT."""
    return use is not None and use["reads"] > 0 and use["sm_pct"] < WORKED_SM_PCT


def _pids(processes: list[dict[str, Any]]) -> set[int]:
    return {p["pid"] for p in processes}


def idle_holders(conditions: dict[str, Any]) -> list[dict[str, Any]]:
    """Other visible processes on the GPU that held memory but did no work in the figure's window, by
    per-process SM use read in the window, else by a GPU idle before the figure while they were there."""
    sm = {p["pid"]: p for p in conditions.get("gpu_others_sm") or []}
    unseen = _pids(conditions.get("gpu_unseen_processes") or [])
    state = idle_before_state(conditions)
    holders = []
    for proc in conditions.get("other_gpu_processes") or []:
        if proc["pid"] in unseen:
            continue
        use = sm.get(proc["pid"])
        if use is not None and use["reads"] > 0:
            if not _sampled_idle(use):
                continue
            evidence = f"SM use 0% in {use['reads']} per-process sample(s) of this figure's window"
        elif state == "idle":
            evidence = "GPU idle while rigcheck had no work on it, before this figure"
        else:
            continue
        holders.append({**proc, "evidence": evidence})
    return holders


def span_clock_fields(span: dict[str, Any], conditions: dict[str, Any]) -> dict[str, Any]:
    """The clock fields of a figure's conditions from its span's start and end readings: 'idle' is left out
    (the end is read after the last call has finished)."""
    out: dict[str, Any] = {"clocks_from": "span"}
    sm = [v for v in span.get("sm_mhz") or [] if v is not None]
    top = span.get("max_sm_mhz") or conditions.get("sm_clock_max_mhz")
    if sm:
        mean = statistics.fmean(sm)
        out.update(sm_clock_mean_mhz=round(mean, 1), sm_clock_min_mhz=min(sm))
        out["clock_ratio"] = round(mean / top, 3) if top else None
    mem = [v for v in span.get("mem_mhz") or [] if v is not None]
    mem_top = span.get("max_mem_mhz")
    if mem:
        out["mem_clock_mean_mhz"] = round(statistics.fmean(mem), 1)
        out["mem_clock_ratio"] = round(statistics.fmean(mem) / mem_top, 3) if mem_top else None
    power = [v for v in span.get("power_w") or [] if v is not None]
    if power:
        out["power_mean_w"] = round(statistics.fmean(power), 1)
    out["throttle"] = sorted({r for r in span.get("reasons") or [] if r != "idle"})
    out["idle_share"] = 0.0
    return out


@dataclass
class Findings:
    """What this module adds to a figure's judgement: reasons make it SUSPECT, notes do not."""

    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stored: dict[str, Any] = field(default_factory=dict)  # new keys for the stored conditions
    view: dict[str, Any] = field(default_factory=dict)  # the conditions the judge reads


def examine(conditions: dict[str, Any], params: dict[str, Any], device: str) -> Findings:
    """The judged view of `conditions` (idle holders and unseen pids out of the process reason; a short
    figure's clocks from its span), with this module's reasons and notes."""
    found = Findings(view=dict(conditions))
    span = given if isinstance(given := params.get("span_clocks"), dict) else {}
    probe, sampled = span.get("idle_probe"), conditions.get("gpu_idle_before")
    if probe and (sampled is None or probe["age_s"] < sampled["age_s"]):  # the fresher look at the idle GPU
        before = {**probe, "source": "stage child"}
        conditions = {**conditions, "gpu_idle_before": before}
        found.stored["gpu_idle_before"] = found.view["gpu_idle_before"] = before
    if conditions.get("widened") and span.get("sm_mhz"):
        fields = span_clock_fields(span, conditions)
        found.stored.update(fields)
        found.view.update(fields, widened=False)
        if params.get("launch_bound"):  # paced by the host, not the clock; the window's busy share is earlier work's
            found.view["utilization_mean_pct"] = None
    user = unseen_user(conditions)
    holders = idle_holders(conditions)
    if conditions.get("gpu_list_blind"):
        found.notes.append(
            f"NVML lists none of rigcheck's own processes on {device} (the driver hides this PID namespace, as in "
            "many containers): another container's use of the GPU could not be told from rigcheck's own"
        )
    if user is not None:
        found.stored["unseen_user"] = user
        memory = f"{_size(user['gpu_memory'])}, " if user["gpu_memory"] else ""
        if user["worked"] is False:
            found.notes.append(
                f"another process that rigcheck cannot see (another container or PID namespace) holds "
                f"{_size(user['gpu_memory'])} on {device} but did no work ({user['evidence']})"
            )
        else:
            worked = user["evidence"] if user["worked"] else f"whether it worked could not be told ({user['evidence']})"
            found.reasons.append(
                "another process that rigcheck cannot see (another container or PID namespace) is using "
                f"{device}: {memory}{worked}; next: `nvidia-smi` on the host (outside this container) names it: "
                "stop it or use another GPU"
            )
    if holders:
        found.stored["gpu_idle_holders"] = holders
        for proc in holders:
            held = f" holds {_size(proc['gpu_memory'])}" if proc.get("gpu_memory") else " holds memory"
            found.notes.append(
                f"{proc['name']} (pid {proc['pid']}){held} on {device} but did no work ({proc['evidence']}); "
                "it may start at any moment"
            )
    skip = _pids(holders) | _pids(conditions.get("gpu_unseen_processes") or [])
    others = Conditions.from_dict(conditions).other_gpu_processes
    if skip and others:
        kept = [p for p in others if p["pid"] not in skip]
        found.view.update(other_gpu_processes=kept, other_gpu_pids=[p["pid"] for p in kept])
    return found
