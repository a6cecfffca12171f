"""Rank 0's analysis of a fleet run: each GPU and each host against the median of its peers on the other hosts, by
the within-host peer rule (trust/peers.off_median), with the slow figure's cause from the one cause function;
the hosts whose probe differs from the rest are engine/fleet/probe_differences.py's.

Standard library only: it reads figures and facts already in the store; no torch.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.registry import FLEET_HOSTS_STAGE
from rigcheck.engine.trust.cause import Expectation, likely_cause
from rigcheck.engine.trust.peers import PEER_TOLERANCE, off_median, peer_groups, peer_span, sound

STAGE = FLEET_HOSTS_STAGE
HOST_OWN_KEYS = ("host",)  # fingerprint basis keys that differ between any two hosts by construction

Hosted = tuple[str, Verdict]


def fleet_peer_verdicts(
    figures: Iterable[tuple[str, Measurement]],
    tolerance: float = PEER_TOLERANCE,
    cpu_models: Mapping[str, str] | None = None,
) -> list[Hosted]:
    """(host, verdict) pairs: a WARN for each GPU more than `tolerance` off the median of the other GPUs of its
    model on the fleet, a WARN for each host below the other hosts' median in most of its figures (each
    INCONCLUSIVE where the slow figure's one cause is someone else's load or a setting in force), and one
    fleet-wide PASS ('' for the host) saying what was compared. Nothing with fewer than two hosts.

    `cpu_models` (host -> its Probe's CPU model) keeps CPU figures to hosts of one CPU model; without it,
    a figure's own params or conditions may name it ("cpu_model"), else CPU figures compare by name."""
    figures = list(figures)
    hosts = sorted({host for host, _ in figures})
    if len(hosts) < 2:
        return []
    gpu_compared, slow_gpus = _slow_gpus(figures, tolerance)
    groups = _host_groups(figures, cpu_models or {})
    slow_hosts = _slow_hosts(groups, tolerance)
    if not gpu_compared and not groups:
        return []
    models = sorted({key[1] for key in groups if key[0] == "GPU"})
    by_cpu = "by CPU model" if cpu_models or any(key[1] for key in groups if key[0] == "CPU") else "by name"
    found = f"{len(slow_gpus)} GPU figure(s) and {len(slow_hosts)} host(s) named" if slow_gpus or slow_hosts else ""
    summary = Verdict(
        STAGE,
        "fleet-peers",
        Status.PASS,
        f"{len(hosts)} hosts compared: {gpu_compared} GPU figure(s) across every GPU of the same model in the "
        f"fleet, {len(groups)} figure(s) host against host (GPU figures as each host's median over its GPUs of "
        f"the model, CPU figures {by_cpu}); "
        + (found or f"none more than {tolerance:.0%} off the median of its peers")
        + " (compared where the figure was sound and the device the bottleneck)",
        {"hosts": hosts, "gpu_figures": gpu_compared, "host_figures": len(groups), "gpu_models": models},
        tolerance=tolerance,
    )
    return [*slow_gpus, *slow_hosts, ("", summary)]


def _peer_cause(m: Measurement, middle: float, peers: list[float], where: str) -> tuple[Status, str, dict[str, Any]]:
    """A slow figure's status and words against its peers' median, from the one cause function: INCONCLUSIVE
    where the cause is someone else's load or a setting in force, else WARN with the cause."""
    found = likely_cause(
        m, Expectation(middle, f"the median of its {len(peers)} {where} ({peer_span(peers)})", "peers")
    )
    numbers = found.numbers()
    if found.unjudgeable(Status.WARN):
        return Status.INCONCLUSIVE, found.unjudged_words(), numbers
    return Status.WARN, found.words(), numbers


def _slow_gpus(figures: list[tuple[str, Measurement]], tolerance: float) -> tuple[int, list[Hosted]]:
    """Each GPU against the median of every other GPU of its model in the fleet, either way, for the figures
    found on two hosts or more (a model on one host only is the within-host peers' job)."""
    compared = 0
    slow: list[Hosted] = []
    for (model, name), per_gpu in peer_groups(((host, m.device), m) for host, m in figures).items():
        if len({host for host, _ in per_gpu}) < 2:
            continue
        compared += 1
        for (host, device), middle, mad, peers in off_median({u: m.value for u, m in per_gpu.items()}, tolerance):
            m = per_gpu[(host, device)]
            ratio = m.value / middle
            if ratio < 1:
                way = f"{1 - ratio:.0%} below"
                status, why, numbers = _peer_cause(m, middle, peers, "peers across the fleet")
            else:
                way, numbers = f"{ratio - 1:.0%} above", {}
                status, why = Status.WARN, "faster than its peers: check the peers, or this figure's timer"
            verdict = Verdict(
                STAGE,
                f"fleet-peers {name}",
                status,
                f"{host} {device} {name} {m.value:,.4g} {m.unit}, {way} the median of its {len(peers)} peers across "
                f"the fleet ({middle:,.4g}, MAD {mad:,.2g}; peers {peer_span(peers)}); {why}",
                {
                    "host": host,
                    "device": device,
                    "stage": m.stage,
                    "value": m.value,
                    "median": middle,
                    "mad": mad,
                    "best": max(peers),
                    "peer_count": len(peers),
                    "ratio": round(ratio, 4),
                    "below": max(0.0, 1 - ratio),
                    "model": model,
                }
                | numbers,
                tolerance=tolerance,
                device=device,
            )
            slow.append((host, verdict))
    return compared, slow


GroupKey = tuple[str, str, str]  # ("GPU", GPU model, figure name) or ("CPU", CPU model or "", figure name)


def _host_groups(
    figures: list[tuple[str, Measurement]], cpu_models: Mapping[str, str]
) -> dict[GroupKey, dict[str, list[Measurement]]]:
    """The figures each host has in common with at least one other host, grouped for host-against-host.

    GPU figures pass the within-host filter. CPU figures fail it by design (bound "host": they measure the
    host, not a GPU), yet across hosts the host is exactly what is compared, so a sound CPU figure of the
    matmul, bandwidth or training stage (bound "host") counts here."""
    groups: dict[GroupKey, dict[str, list[Measurement]]] = defaultdict(lambda: defaultdict(list))
    for (model, name), per_gpu in peer_groups(((host, m.device), m) for host, m in figures).items():
        for (host, _), m in per_gpu.items():
            groups[("GPU", model, name)][host].append(m)
    for host, m in figures:
        if m.device == "cpu" and m.params.get("bound") == "host" and sound(m):
            cpu = cpu_models.get(host) or m.params.get("cpu_model") or (m.conditions or {}).get("cpu_model") or ""
            groups[("CPU", str(cpu), m.name)][host].append(m)
    return {key: per_host for key, per_host in groups.items() if len(per_host) >= 2}


@dataclass(frozen=True)
class _SlowFigure:
    key: GroupKey
    value: float
    middle: float  # the other hosts' median
    below: float
    slowest: Measurement  # the host's own slowest figure of the group: where its cause is read
    count: int
    peers: list[float]

    def judged(self) -> tuple[Status, str, dict[str, Any]]:
        return _peer_cause(self.slowest, self.middle, self.peers, "other hosts")


def _slow_hosts(groups: dict[GroupKey, dict[str, list[Measurement]]], tolerance: float) -> list[Hosted]:
    """A host more than `tolerance` below the median of the other hosts in most of the figures it shares with
    them: a WARN with the cause of its worst figure, or INCONCLUSIVE where it is slow in most only counting
    figures whose cause is someone else's load or a setting in force."""
    compared: Counter[str] = Counter()
    slow: dict[str, list[_SlowFigure]] = defaultdict(list)
    for key, per_host in groups.items():
        values = {host: statistics.median(m.value for m in ms) for host, ms in per_host.items()}
        compared.update(values.keys())
        for host, middle, _, others in off_median(values, tolerance):
            if values[host] >= middle:
                continue  # a fast host is no fault of that host
            ms = per_host[host]
            slowest = min(ms, key=lambda m: m.value)
            below = 1.0 - values[host] / middle
            slow[host].append(_SlowFigure(key, values[host], middle, below, slowest, len(ms), others))
    out: list[Hosted] = []
    named = [host for host in sorted(slow) if len(slow[host]) * 2 > compared[host]]
    for host in named:
        figures = slow[host]
        judged = [(f, *f.judged()) for f in figures]
        clean = [j for j in judged if j[1] == Status.WARN]
        counted = clean if len(clean) * 2 > compared[host] else [j for j in judged if j[1] != Status.WARN]
        worst, status, why, numbers = max(counted, key=lambda j: j[0].below)
        if status == Status.WARN:  # the first cause that says something, the worst figure's first
            said = [j for j in [(worst, status, why, numbers), *clean] if j[3]["cause_kind"] != "nothing"]
            _, _, why, numbers = said[0] if said else (worst, status, why, numbers)
        kind, model, name = worst.key
        if kind == "GPU":
            where = f"median of its {worst.count} {model} GPU(s)" if worst.count > 1 else f"on its {model}"
        else:
            where = "on its CPU"
        verdict = Verdict(
            STAGE,
            "fleet-host",
            status,
            f"{host} is {'the slow host' if len(named) == 1 else f'one of {len(named)} slow hosts'}: "
            f"{len(figures)} of its {compared[host]} compared figure(s) more than "
            f"{tolerance:.0%} below the other hosts' median; worst {name} {worst.value:,.4g} {worst.slowest.unit} "
            f"({where}), {worst.below:.0%} below their median {worst.middle:,.4g}; {why}",
            {
                "host": host,
                "slow": len(figures),
                "compared": compared[host],
                "worst": name,
                "value": worst.value,
                "median": worst.middle,
                "below": worst.below,
                "slow_figures": [f.key[2] for f in figures],
            }
            | numbers,
            tolerance=tolerance,
        )
        out.append((host, verdict))
    return out
