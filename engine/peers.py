"""After a per-GPU stage: each GPU's figures against the same figures on its peers (GPUs of the same
model on the host), and the GPUs against the CPU where both ran the same work.

Standard library only: the parent runs it on the annotated figures; no torch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

from .events import Measurement, Status, Verdict

PEER_TOLERANCE = 0.10  # a GPU more than 10% below the best of its peers is named
GPU_BOUND_UTILIZATION = 80.0  # below this, the figure measured the host more than the GPU


def comparable(m: Measurement) -> bool:
    """A figure that says something about the GPU: a sound measurement, with the GPU the bottleneck."""
    conditions = m.conditions or {}
    if m.params.get("broken") or conditions.get("trust") in ("BROKEN", "NOISY", "UNJUDGED"):
        return False
    bound = m.params.get("bound")
    if m.params.get("launch_bound") or not (
        bound in ("compute", "memory") or (bound == "link" and m.params.get("pinned"))
    ):
        return False
    if m.params.get("timer") == "events":
        return True  # timed on the device itself: the GPU (or its link) did the work being timed
    # Timed by the host's clock: only where the driver saw the GPU busy was the GPU the bottleneck. (NVML's
    # utilization lags a short burst: an event-timed matmul read 15%, so it is no test for those.)
    utilization = conditions.get("utilization_mean_pct")
    return utilization is None or utilization >= GPU_BOUND_UTILIZATION


def _model(m: Measurement) -> str:
    return str((m.conditions or {}).get("gpu_name") or m.params.get("gpu_name") or "GPU")


def _cause(m: Measurement) -> str:
    """The likely cause of a slow figure, from its own conditions."""
    c = m.conditions or {}
    reasons = list(c.get("trust_reasons") or [])
    if reasons:
        return "; ".join(reasons)
    clock, top = c.get("sm_clock_mean_mhz"), c.get("sm_clock_max_mhz")
    if clock and top:
        throttle = ", ".join(r for r in c.get("throttle", []) if r != "idle") or "no throttle reason reported"
        return f"its SM clock averaged {clock:,.0f} MHz against {top:,.0f}: {throttle}"
    return "no cause in its conditions"


def peer_verdicts(figures: Iterable[Measurement], stage: str, tolerance: float = PEER_TOLERANCE) -> Iterator[Verdict]:
    """A WARN for each GPU figure more than `tolerance` below the best of its peers; one PASS per stage
    saying what was compared. Nothing at all with fewer than two GPUs of a model."""
    groups: dict[tuple[str, str], dict[str, Measurement]] = defaultdict(dict)
    for m in figures:
        if m.device.startswith("cuda") and comparable(m):
            groups[(_model(m), m.name)][m.device] = m
    compared = 0
    slow: list[Verdict] = []
    for (model, name), per_device in groups.items():
        if len(per_device) < 2:
            continue
        compared += 1
        for device, m in sorted(per_device.items()):
            peers = [p.value for d, p in per_device.items() if d != device]
            best = max(peers)
            if m.value < (1.0 - tolerance) * best:
                below = 1.0 - m.value / best
                span = f"{min(peers):,.4g}-{best:,.4g}" if len(peers) > 1 else f"{best:,.4g}"
                slow.append(
                    Verdict(
                        stage,
                        f"peers {name}",
                        Status.WARN,
                        f"{device} {name} {m.value:,.4g} {m.unit}, {below:.0%} below its peers ({span}); {_cause(m)}",
                        {"device": device, "value": m.value, "peers": peers, "below": below, "model": model},
                        tolerance=tolerance,
                        device=device,
                    )
                )
    if not compared:
        return
    yield from slow
    if not slow:
        yield Verdict(
            stage,
            "peers",
            Status.PASS,
            f"{compared} figure(s) compared across GPUs of the same model: none more than {tolerance:.0%} "
            "below the best of its peers (compared where the GPU was the bottleneck)",
            {"compared": compared},
            tolerance=tolerance,
        )


def gpu_over_cpu(figures: Iterable[Measurement], stage: str) -> Iterator[Verdict]:
    """Training's speed-up of each GPU over the CPU, for the same network, batch and precision."""
    by_key: dict[str, dict[str, float]] = defaultdict(dict)
    for m in figures:
        if not m.params.get("broken") and m.name.startswith("train "):
            by_key[m.name.removeprefix("train ")][m.device] = m.value
    for device in sorted({d for rates in by_key.values() for d in rates if d.startswith("cuda")}):
        table = {k: round(r[device] / r["cpu"], 1) for k, r in by_key.items() if device in r and r.get("cpu")}
        if table:
            text = ", ".join(f"{k}: {v}x" for k, v in table.items())
            yield Verdict(
                stage, "speedup", Status.PASS, f"{device} over the CPU: {text}", {"speedup": table}, device=device
            )
