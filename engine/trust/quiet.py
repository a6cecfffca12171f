"""Before a throughput stage: is the host quiet, by the same rule that judges each figure (on the CPUs
rigcheck may use, and its cgroup quota), and optionally wait until it is, saying which processes it is
waiting for."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from rigcheck.engine.trust.conditions import (
    DEFAULT_POLICY,
    TrustPolicy,
    cpu_contention,
    cpu_pools,
    rest_words,
    summarise,
)
from rigcheck.engine.trust.judgement import CPU_LOAD, Reason
from rigcheck.engine.trust.view import Conditions

WAIT = "wait"  # the log level of what --wait-quiet says while it waits: front ends show it as it comes


def busy_next_step(gave_up_after_s: float | None) -> str:
    """What to do about a busy host. After --wait-quiet gave up, waiting again the same way would only repeat it,
    so never "run with --wait-quiet" then."""
    if gave_up_after_s is None:
        return "next: stop what keeps them busy, or run with --wait-quiet SECONDS"
    return (
        f"next: stop what keeps them busy (they stayed busy for all {gave_up_after_s:.0f} s of --wait-quiet), "
        "or run when they are done"
    )


@dataclass(frozen=True)
class HostBusy:
    """Mean CPUs kept busy by other processes over a while on the CPUs rigcheck may use, how many those are,
    and the busiest of them; `conditions` is the window summarised as a figure's would be."""

    others: float
    cpus: float
    busiest: list[tuple[str, int, float]] = field(default_factory=list)  # (name, pid, CPUs)
    conditions: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        names = ", ".join(f"{name} (pid {pid}, {cpus:.1f} CPUs)" for name, pid, cpus in self.busiest[:3])
        of = f"rigcheck's {self.cpus:g}" if self.conditions.get("cpu_set_size") else f"{self.cpus:g}"
        if names and not self.conditions.get("cpu_set_size"):  # the host's processes add up to its total
            names += rest_words(self.others, [cpus for _, _, cpus in self.busiest[:3]])
        return f"other processes keep {self.others:.1f} of {of} CPUs busy" + (f": {names}" if names else "")

    def reasons(self, policy: TrustPolicy = DEFAULT_POLICY) -> list[Reason]:
        """Why a figure that wants every CPU rigcheck may use would be SUSPECT now (empty: quiet)."""
        if not self.conditions:
            busy = policy.contended(self.others, self.cpus)
            return [Reason("other processes keep CPUs busy", CPU_LOAD, True)] if busy else []
        pools = cpu_pools(self.conditions)
        wanted = min((size for _, size, _, _ in pools), default=1.0)  # every CPU rigcheck may use at once
        return cpu_contention(self.conditions, wanted, policy)

    def contended(self, policy: TrustPolicy = DEFAULT_POLICY) -> bool:
        return bool(self.reasons(policy))


def others_busy(sampler: Any, seconds: float) -> HostBusy | None:
    now = time.time()
    samples = [s for s in sampler.window(now - seconds, now) if s.t >= now - seconds]
    if not samples:
        return None
    conditions = summarise(samples, None)
    view = Conditions.from_dict(conditions)
    busiest = [(p["name"], p["pid"], p["cpus"]) for p in view.host_top_others]
    if view.cpu_set_size and view.cpu_set_others_cpus is not None:  # (summarise keeps the two together)
        others, cpus = view.cpu_set_others_cpus, view.cpu_set_size
    else:
        others = sum(s.host.others_cpus for s in samples) / len(samples)
        cpus = samples[0].host.cpus
    return HostBusy(others, cpus, busiest, conditions)


def wait_quiet(
    sampler: Any,
    max_wait_s: float,
    quiet_for_s: float = 2.0,
    policy: TrustPolicy = DEFAULT_POLICY,
    say_every_s: float = 5.0,
    stop: Callable[[], bool] = lambda: False,
) -> Generator[HostBusy, None, tuple[bool, float, HostBusy | None]]:
    """Wait up to max_wait_s for quiet_for_s seconds of a host quiet enough for a figure that wants every
    CPU rigcheck may use, yielding what it is waiting for now and then. Returns (quiet, waited, last reading)."""
    start = time.monotonic()
    said = float("-inf")
    time.sleep(min(quiet_for_s, max_wait_s))
    while True:
        busy = others_busy(sampler, quiet_for_s)
        waited = time.monotonic() - start
        if busy is not None and not busy.contended(policy):
            return True, waited, busy
        if waited >= max_wait_s or stop():
            return False, waited, busy
        if busy is not None and waited - said >= say_every_s:
            said = waited
            yield busy
        time.sleep(0.25)
