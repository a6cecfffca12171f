"""Before a throughput stage: is the host quiet, by the same rule that judges each figure, and
optionally wait until it is, saying which processes it is waiting for."""

from __future__ import annotations

import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

from rigcheck.engine.trust.conditions import DEFAULT_POLICY, TrustPolicy, busiest_others


@dataclass(frozen=True)
class HostBusy:
    """Mean CPUs kept busy by other processes over a while, the CPU count, and the busiest of them."""

    others: float
    cpus: int
    busiest: list[tuple[str, int, float]] = field(default_factory=list)  # (name, pid, CPUs)

    def describe(self) -> str:
        names = ", ".join(f"{name} (pid {pid}, {cpus:.1f} CPUs)" for name, pid, cpus in self.busiest[:3])
        return f"other processes keep {self.others:.1f} of {self.cpus} CPUs busy" + (f": {names}" if names else "")


def others_busy(sampler: Any, seconds: float) -> HostBusy | None:
    now = time.time()
    samples = [s for s in sampler.window(now - seconds, now) if s.t >= now - seconds]
    if not samples:
        return None
    own = {pid for s in samples for pid in s.host.own_pids}
    busiest = [(p["name"], p["pid"], p["cpus"]) for p in busiest_others(samples, own)]
    others = sum(s.host.others_cpus for s in samples) / len(samples)
    return HostBusy(others, samples[0].host.cpus, busiest)


def wait_quiet(
    sampler: Any,
    max_wait_s: float,
    quiet_for_s: float = 2.0,
    policy: TrustPolicy = DEFAULT_POLICY,
    say_every_s: float = 5.0,
    stop: Callable[[], bool] = lambda: False,
) -> Generator[HostBusy, None, tuple[bool, float, HostBusy | None]]:
    """Wait up to max_wait_s for quiet_for_s seconds of a host quiet enough for a figure that wants every
    CPU, yielding what it is waiting for now and then. Returns (quiet, waited, last reading)."""
    start = time.monotonic()
    said = float("-inf")
    time.sleep(min(quiet_for_s, max_wait_s))
    while True:
        busy = others_busy(sampler, quiet_for_s)
        waited = time.monotonic() - start
        if busy is not None and not policy.contended(busy.others, busy.cpus):
            return True, waited, busy
        if waited >= max_wait_s or stop():
            return False, waited, busy
        if busy is not None and waited - said >= say_every_s:
            said = waited
            yield busy
        time.sleep(0.25)
