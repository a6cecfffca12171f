"""After a per-GPU stage: each GPU's figures against the same figures on its peers (GPUs of the same
model on the host), and the GPUs against the CPU where both ran the same work. The rule and its filters
are shared with the fleet's comparison across hosts (engine/fleet/compare_hosts.py).

Standard library only: the parent runs it on the annotated figures; no torch.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from statistics import median
from typing import TypeVar

from rigcheck.engine.events import Measurement, Status, Trust, Verdict
from rigcheck.engine.trust.cause import NOTHING, NOTHING_NEXT, Cause, Expectation, likely_cause
from rigcheck.engine.trust.judgement import trust_in

U = TypeVar("U")  # the unit a figure comes from: a device on one host, (host, device) across a fleet

PEER_TOLERANCE = 0.10  # a GPU more than 10% off the median of its peers is named
MAD_SCALE = 1.4826  # a median absolute deviation times this estimates a normal spread's standard deviation
MAD_FLOOR = 3.0  # and a figure must also lie this many scaled MADs from the median: peers that scatter widely name none
GPU_BOUND_UTILIZATION = 80.0  # below this, the figure measured the host more than the GPU
# the one cause function's words where nothing in a figure's conditions explains it
NO_CAUSE = Cause(NOTHING, NOTHING_NEXT, "nothing").words()


def sound(m: Measurement) -> bool:
    """A figure that stands as a result: not broken, judged, steady, and not bound by launch overhead."""
    conditions = m.conditions or {}
    return not (
        m.params.get("broken")
        or trust_in(conditions) in (Trust.BROKEN, Trust.NOISY, Trust.UNJUDGED)
        or m.params.get("launch_bound")
    )


def comparable(m: Measurement) -> bool:
    """A figure that says something about the GPU: a sound measurement, with the GPU the bottleneck."""
    bound = m.params.get("bound")
    if not sound(m) or not (bound in ("compute", "memory") or (bound == "link" and m.params.get("pinned"))):
        return False
    if m.params.get("timer") == "events":
        return True  # timed on the device itself: the GPU (or its link) did the work being timed
    # Timed by the host's clock: only where the driver saw the GPU busy was the GPU the bottleneck. (NVML's
    # utilization lags a short burst: an event-timed matmul read 15%, so it is no test for those.)
    utilization = (m.conditions or {}).get("utilization_mean_pct")
    return utilization is None or utilization >= GPU_BOUND_UTILIZATION


def gpu_model(m: Measurement) -> str:
    return str((m.conditions or {}).get("gpu_name") or m.params.get("gpu_name") or "GPU")


def cause_of(m: Measurement, expectation: Expectation | None = None) -> str:
    """The likely cause of a slow figure and its next step, in the one cause function's words."""
    return likely_cause(m, expectation).words()


def peer_groups(figures: Iterable[tuple[U, Measurement]]) -> dict[tuple[str, str], dict[U, Measurement]]:
    """The comparable GPU figures by (GPU model, figure name), each keyed by the unit it came from."""
    groups: dict[tuple[str, str], dict[U, Measurement]] = defaultdict(dict)
    for unit, m in figures:
        if m.device.startswith("cuda") and comparable(m):
            groups[(gpu_model(m), m.name)][unit] = m
    return groups


def below_best(values: Mapping[U, float], tolerance: float) -> Iterator[tuple[U, list[float], float]]:
    """The rule: each unit more than `tolerance` below the best of the others, with the others' values
    and how far below their best it is (a share), in the units' order."""
    # the best of the others is the best unit's, or the runner-up's for the best unit: a fleet stays fast
    ranked = sorted(values, key=lambda u: values[u], reverse=True)[:2]
    for unit, value in sorted(values.items()):
        best = values[ranked[1] if unit == ranked[0] else ranked[0]]
        if value < (1.0 - tolerance) * best:
            yield unit, [v for u, v in values.items() if u != unit], 1.0 - value / best


def peer_span(peers: list[float]) -> str:
    return f"{min(peers):,.4g}-{max(peers):,.4g}" if len(peers) > 1 else f"{max(peers):,.4g}"


def off_median(values: Mapping[U, float], tolerance: float) -> Iterator[tuple[U, float, float, list[float]]]:
    """The rule: each unit more than `tolerance` off the median of the others, and more than MAD_FLOOR scaled MADs
    from it, either way; with that median, their MAD and the others' values. With a single other unit, only the
    lower of the two is named: one cannot tell which of two is off, and slow is the usual fault."""
    for unit, value in sorted(values.items()):
        others = [v for u, v in values.items() if u != unit]
        if not others:
            continue
        middle = median(others)
        mad = median(abs(v - middle) for v in others)
        if middle <= 0 or abs(value / middle - 1.0) <= tolerance or abs(value - middle) <= MAD_FLOOR * MAD_SCALE * mad:
            continue
        if value > middle and len(others) < 2:
            continue
        yield unit, middle, mad, others


def _link_share(m: Measurement) -> str:
    """', 26% of its link (63)' for a host-link figure whose link limit is known."""
    limit = m.params.get("limit")
    if m.params.get("bound") != "link" or not limit:
        return ""
    return f", {m.value / float(limit):.0%} of its link ({float(limit):.3g})"


def peer_verdicts(figures: Iterable[Measurement], stage: str, tolerance: float = PEER_TOLERANCE) -> Iterator[Verdict]:
    """A WARN for each GPU figure more than `tolerance` off the median of its peers, either way, with both numbers
    (INCONCLUSIVE where a slow figure's cause lies outside the GPU); one PASS per stage saying what was compared.
    Nothing at all with fewer than two GPUs of a model."""
    compared = 0
    off: list[Verdict] = []
    for (model, name), per_device in peer_groups((m.device, m) for m in figures).items():
        if len(per_device) < 2:
            continue
        compared += 1
        for device, middle, mad, peers in off_median({d: m.value for d, m in per_device.items()}, tolerance):
            m = per_device[device]
            ratio = m.value / middle
            way = f"{1 - ratio:.0%} below" if ratio < 1 else f"{ratio - 1:.0%} above"
            status, why = Status.WARN, "faster than its peers: check the peers, or this figure's timer"
            numbers: dict[str, object] = {}
            if ratio < 1:
                found = likely_cause(m, Expectation(middle, f"the median of its peers ({peer_span(peers)})", "peers"))
                # someone else's load or a setting made it slow: that says nothing of this GPU against its peers
                unjudged = found.unjudgeable(Status.WARN)
                status = Status.INCONCLUSIVE if unjudged else Status.WARN
                why = found.unjudged_words() if unjudged else found.words()
                numbers = found.numbers()
            off.append(
                Verdict(
                    stage,
                    f"peers {name}",
                    status,
                    f"{device} {name} {m.value:,.4g} {m.unit}{_link_share(m)}: {ratio:.2f}x its {len(peers)} "
                    f"peers' median ({middle:,.4g}, MAD {mad:,.2g}; {way}, peers {peer_span(peers)}); {why}",
                    {
                        "device": device,
                        "value": m.value,
                        "peers": peers,
                        "median": middle,
                        "mad": mad,
                        "ratio": round(ratio, 4),
                        "below": round(1 - ratio, 4),
                        "model": model,
                    }
                    | numbers,
                    tolerance=tolerance,
                    device=device,
                )
            )
    if not compared:
        return
    yield from off
    if not off:
        yield Verdict(
            stage,
            "peers",
            Status.PASS,
            f"{compared} figure(s) compared across GPUs of the same model: none more than {tolerance:.0%} "
            "off the median of its peers (compared where the GPU was the bottleneck)",
            {"compared": compared},
            tolerance=tolerance,
        )
