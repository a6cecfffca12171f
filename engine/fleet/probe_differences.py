"""Rank 0's check that a fleet's hosts run the same stack: each host whose probe (driver, torch build, CUDA/HIP,
cuDNN/MIOpen, NCCL, GPUs) or environment fingerprint differs from the majority's is named.

Standard library only: it reads facts already in the store; no torch.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.facts.fingerprint import digest
from rigcheck.engine.registry import FLEET_HOSTS_STAGE

STAGE = FLEET_HOSTS_STAGE
HOST_OWN_KEYS = ("host",)  # fingerprint basis keys that differ between any two hosts by construction

Hosted = tuple[str, Verdict]


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
