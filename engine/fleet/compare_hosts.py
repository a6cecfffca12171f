"""Rank 0's analysis of a fleet run: each GPU and each host against the median of its peers on the other hosts, by
the within-host peer rule (trust/peers.off_median), with the slow figure's cause from the one cause function;
and the hosts whose probe (driver, torch build, GPUs, fingerprint) differs from the rest.

Standard library only: it reads figures and facts already in the store; no torch.
"""

from __future__ import annotations

import json
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.facts.fingerprint import digest
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


def _devices(facts: dict[str, Any]) -> list[dict[str, Any]]:
    return list(facts.get("devices") or [])


def _toolkit(build: dict[str, Any]) -> str | None:
    if build.get("hip"):
        return f"HIP {build['hip']}"
    return f"CUDA {build['cuda']}" if build.get("cuda") else None


def _dnn(build: dict[str, Any]) -> str | None:
    text = build.get("dnn_version_text")
    return f"{build.get('dnn_library') or 'DNN'} {text}" if text else None


# What Probe reports that must agree across a fleet: (name, value from the facts, its words, words for none).
PROBE_ITEMS: tuple[tuple[str, Callable[[dict[str, Any]], Any], str, str], ...] = (
    ("driver", lambda f: (f.get("driver") or {}).get("version"), "driver {}", "no GPU driver"),
    ("torch", lambda f: (f.get("torch") or {}).get("torch"), "torch {}", "no torch version"),
    ("build", lambda f: (f.get("torch") or {}).get("build"), "{} build", "no build kind"),
    ("CUDA/HIP", lambda f: _toolkit(f.get("torch") or {}), "{}", "no CUDA or HIP"),
    ("cuDNN/MIOpen", lambda f: _dnn(f.get("torch") or {}), "{}", "no cuDNN or MIOpen"),
    ("NCCL", lambda f: (f.get("torch") or {}).get("nccl") or f.get("nccl"), "NCCL {}", "no NCCL version"),
    (
        "GPU model",
        lambda f: ", ".join(sorted({str(d.get("name")) for d in _devices(f)})) or None,
        "{}",
        "no GPU",
    ),
    ("GPU count", lambda f: len(_devices(f)), "{} GPU(s)", "no GPU count"),
)


def probe_differences(
    host_facts: dict[str, dict[str, Any]], fingerprints: dict[str, tuple[str, dict[str, Any]]]
) -> list[Hosted]:
    """(host, verdict) pairs: a WARN for each host whose driver, torch build, CUDA/HIP, cuDNN/MIOpen, NCCL,
    GPUs or environment fingerprint differs from the majority's; a WARN ('' for the host) naming the groups
    where there is no majority; a WARN for a host that reported no probe facts or no fingerprint; one PASS
    when every host agrees. Pass every host of the fleet as a key of `host_facts` ({} where none came)."""
    hosts = sorted(set(host_facts) | set(fingerprints))
    if len(hosts) < 2:
        return []
    out: list[Hosted] = []
    for host in hosts:
        if not host_facts.get(host):
            out.append(_probe_warn(host, "its probe did not report: driver, torch build and GPUs not compared"))
        if host not in fingerprints:
            out.append(_probe_warn(host, "it reported no environment fingerprint: its environment not compared"))
    agreed: list[str] = []
    for item, read, words, none in PROBE_ITEMS:
        values = {h: read(facts) for h, facts in sorted(host_facts.items()) if facts}
        if all(v is None for v in values.values()):
            continue  # nothing reports it (NCCL, where Probe does not)
        texts = {h: none if v is None else words.format(v) for h, v in values.items()}
        split = _split(texts)
        if split is None:
            agreed.append(next(iter(texts.values())))
        elif split.major is None:
            groups = "; ".join(f"{texts[hs[0]]} on {', '.join(hs)}" for hs in split.groups)
            out.append(_mixed(item, f"mixed fleet, no majority for the {item}: {groups}", split))
        else:
            there = next(("none" if v is None else str(v)) for h, v in values.items() if texts[h] == split.major)
            for h in split.odd:
                text = f"{texts[h]} here, {there} on {split.held} of {split.total} hosts"
                out.append(_probe_warn(h, text, {"item": item, "value": texts[h], "majority": split.major}))
    out += _fingerprint_differences(fingerprints, agreed)
    if out:
        return out
    text = f"{len(hosts)} hosts agree on {', '.join(agreed)}"
    return [("", Verdict(STAGE, "fleet-probe", Status.PASS, text, {"hosts": hosts, "compared": agreed}))]


def _fingerprint_differences(fingerprints: dict[str, tuple[str, dict[str, Any]]], agreed: list[str]) -> list[Hosted]:
    """The environment fingerprint, recomputed without the keys every host has its own value for (its name),
    with the basis keys that set a host apart."""
    bases = {h: {k: v for k, v in basis.items() if k not in HOST_OWN_KEYS} for h, (_, basis) in fingerprints.items()}
    prints = {h: digest(basis) if basis else fingerprints[h][0] for h, basis in sorted(bases.items())}
    split = _split(prints)
    item = "environment fingerprint"
    if split is None:
        if len(prints) >= 2:
            agreed.append(f"the {item} (all but its {', '.join(HOST_OWN_KEYS)})")
        return []
    if split.major is None:
        first = split.groups[0]
        groups = "; ".join(
            f"{', '.join(hs)} differ from {', '.join(first)} in {_differing(bases[hs[0]], bases[first[0]])}"
            for hs in split.groups[1:]
        )
        return [_mixed(item, f"mixed fleet, no majority for the {item}: {groups}", split)]
    reference = bases[next(h for h in prints if prints[h] == split.major)]
    return [
        _probe_warn(
            h,
            f"{item} differs from {split.held} of {split.total} hosts in {_differing(bases[h], reference)}",
            {"item": item, "keys": _differing_keys(bases[h], reference)},
        )
        for h in split.odd
    ]


@dataclass(frozen=True)
class _Split:
    """How the hosts divide over one value: the majority's (None where no value has more than half the
    hosts), the hosts without it, and every group of hosts sharing a value, largest first."""

    major: str | None
    held: int
    total: int
    odd: list[str]
    groups: list[list[str]]


def _split(values: dict[str, str]) -> _Split | None:
    """None where the hosts all agree (or fewer than two report)."""
    counts = Counter(values.values())
    if len(values) < 2 or len(counts) == 1:
        return None
    value, held = counts.most_common(1)[0]
    major = value if held * 2 > len(values) else None
    odd = [h for h in values if values[h] != value] if major is not None else []
    groups = [sorted(h for h in values if values[h] == v) for v, _ in counts.most_common()]
    return _Split(major, held, len(values), sorted(odd), groups)


def _probe_warn(host: str, text: str, numbers: dict[str, Any] | None = None) -> Hosted:
    return host, Verdict(STAGE, "fleet-probe", Status.WARN, text, {"host": host, **(numbers or {})})


def _mixed(item: str, text: str, split: _Split) -> Hosted:
    return "", Verdict(STAGE, "fleet-probe", Status.WARN, text, {"item": item, "groups": split.groups})


def _differing_keys(here: dict[str, Any], there: dict[str, Any]) -> list[str]:
    return sorted(k for k in set(here) | set(there) if here.get(k) != there.get(k))


def _differing(here: dict[str, Any], there: dict[str, Any]) -> str:
    return "; ".join(
        f"{k} ({_short(here.get(k))} against {_short(there.get(k))})" for k in _differing_keys(here, there)
    )


def _short(value: Any, limit: int = 60) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."
