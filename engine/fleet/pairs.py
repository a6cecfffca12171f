"""Which hosts pair up in each round, and which host or link the pair figures show to be slow (stdlib only)."""

from __future__ import annotations

import bisect
import random
import statistics
from collections.abc import Iterable

from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.registry import FLEET_LINKS_STAGE
from rigcheck.engine.trust.peers import NO_CAUSE, cause_of, sound

STAGE = FLEET_LINKS_STAGE
ALL_PAIRS_UP_TO = 16  # hosts: every pair meets; past it, SAMPLED_ROUNDS rounds (a round costs every host time)
SAMPLED_ROUNDS = 8


def pair_schedule(n: int) -> list[list[tuple[int, int]]]:
    """Up to ALL_PAIRS_UP_TO hosts, every round of the round robin; past it, SAMPLED_ROUNDS of its rounds picked
    by a seed every host shares (the fleet's size), so each host meets that many distinct peers and the
    pairwise part takes the same time for 20 hosts as for 1,000 (n-1 rounds would take hours there)."""
    rounds = round_robin(n)
    if n <= ALL_PAIRS_UP_TO:
        return rounds
    picked = random.Random(n).sample(range(len(rounds)), SAMPLED_ROUNDS)
    return [rounds[r] for r in sorted(picked)]


def round_robin(n: int) -> list[list[tuple[int, int]]]:
    """Round robin by the circle method: every pair of n hosts exactly once, each host at most once a
    round; n-1 rounds for even n, n for odd n (one host has a bye each round). Pairs are (low, high)."""
    if n < 1:
        raise ValueError(f"a fleet has at least one host, got {n}")
    slots = n + n % 2  # an odd fleet gets a phantom host: whoever meets it has the bye
    circle = list(range(slots))
    rounds = []
    for _ in range(slots - 1):
        pairs = [(circle[i], circle[slots - 1 - i]) for i in range(slots // 2)]
        rounds.append(sorted((min(a, b), max(a, b)) for a, b in pairs if max(a, b) < n))
        circle = [circle[0], circle[-1], *circle[1:-1]]  # host 0 stays put, the rest turn one place
    return rounds


def _hosts(figure: Measurement) -> tuple[str, str]:
    a, b = figure.params["pair"]
    return str(a), str(b)


def _cause(figures: list[Measurement]) -> str:
    causes = [cause_of(f) for f in sorted(figures, key=lambda f: f.value)]
    found = next((c for c in causes if c != NO_CAUSE), None)
    return f"; {found}" if found else ""


def _gbs(value: float) -> str:
    return f"{value:.2f} GB/s"


def pair_verdicts(figures: Iterable[Measurement], tolerance: float = 0.10) -> list[tuple[str, Verdict]]:
    """(host the verdict is about, or '' for the fleet, Verdict) from the pairwise figures of one size.

    A host is slow when most of its pairs (at least two, more than half) fall more than `tolerance`
    below the median of the pairs it is not in: set against the median of every pair, a slow host in
    a fleet of three drags the median down with it (it is in two of the three pairs). A slow pair
    whose hosts are both fine elsewhere is the link between them. Unsound figures (broken, NOISY,
    UNJUDGED) are left out, as within a host; a slow one names the cause its conditions give.
    """
    usable = [f for f in figures if sound(f)]
    by_size: dict[int, list[Measurement]] = {}
    for figure in usable:
        by_size.setdefault(int(figure.params.get("bytes", 0)), []).append(figure)
    out: list[tuple[str, Verdict]] = []
    for group in by_size.values():
        out += _one_size(group, tolerance)
    return out


def _one_size(figures: list[Measurement], tolerance: float) -> list[tuple[str, Verdict]]:
    if len(figures) < 2:
        return []
    floor = 1.0 - tolerance
    hosts = sorted({h for f in figures for h in _hosts(f)})
    by_host: dict[str, list[Measurement]] = {host: [] for host in hosts}
    for figure in figures:
        for host in set(_hosts(figure)):
            by_host[host].append(figure)
    everything = sorted(f.value for f in figures)
    slow_hosts: dict[str, tuple[list[Measurement], float]] = {}
    for host in hosts:
        mine = by_host[host]
        others = everything.copy()  # every figure but the host's own: a few removed from the sorted whole
        for figure in mine:
            del others[bisect.bisect_left(others, figure.value)]
        if not others:
            continue
        reference = statistics.median(others)
        slow = [f for f in mine if f.value < floor * reference]
        if len(slow) >= 2 and len(slow) * 2 > len(mine):
            slow_hosts[host] = (mine, reference)
    out: list[tuple[str, Verdict]] = []
    for host, (mine, reference) in slow_hosts.items():
        shown = ", ".join(f"with {_peer(f, host)} {_gbs(f.value)}" for f in mine)
        out.append(
            (
                host,
                Verdict(
                    STAGE,
                    f"slow host {host}",
                    Status.WARN,
                    f"{host} is slow: its pairs ran {shown}, against a median of {_gbs(reference)} for the pairs "
                    f"without it (more than {tolerance:.0%} below){_cause(mine)}",
                    {"host": host, "pairs": {_peer(f, host): f.value for f in mine}, "reference_gbs": reference},
                    tolerance=tolerance,
                ),
            )
        )
    clear = [f.value for f in figures if not set(_hosts(f)) & set(slow_hosts)]
    median = statistics.median(clear or [f.value for f in figures])
    for figure in figures:
        a, b = _hosts(figure)
        if a in slow_hosts or b in slow_hosts or figure.value >= floor * median:
            continue
        out.append(
            (
                "",
                Verdict(
                    STAGE,
                    f"slow link {a}-{b}",
                    Status.WARN,
                    f"the link {a}-{b} is slow: {_gbs(figure.value)}, {1 - figure.value / median:.0%} below the "
                    f"median of the pairs {_gbs(median)}; {a} and {b} are not slow with their other peers"
                    f"{_cause([figure])}",
                    {
                        "pair": [a, b],
                        "busbw_gbs": figure.value,
                        "median_gbs": median,
                        "round": figure.params.get("round"),
                    },
                    tolerance=tolerance,
                ),
            )
        )
    if not out:
        values = [f.value for f in figures]
        out.append(
            (
                "",
                Verdict(
                    STAGE,
                    "pairs",
                    Status.PASS,
                    f"{len(figures)} pairs of {len(hosts)} hosts compared: busbw {_gbs(min(values))} to "
                    f"{_gbs(max(values))}, median {_gbs(median)}; none more than {tolerance:.0%} below",
                    {"pairs": len(figures), "hosts": hosts, "min_gbs": min(values), "max_gbs": max(values)},
                    tolerance=tolerance,
                ),
            )
        )
    return out


def _peer(figure: Measurement, host: str) -> str:
    a, b = _hosts(figure)
    return b if a == host else a
