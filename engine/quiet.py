"""Before a throughput stage: is the host quiet, and optionally wait until it is."""

from __future__ import annotations

import time
from typing import Any

from .conditions import DEFAULT_POLICY, TrustPolicy


def others_busy(sampler: Any, seconds: float) -> tuple[float, int] | None:
    """Mean CPUs kept busy by other processes over the last `seconds`, and the CPU count."""
    now = time.time()
    samples = [s for s in sampler.window(now - seconds, now) if s.t >= now - seconds]
    if not samples:
        return None
    return sum(s.host.others_cpus for s in samples) / len(samples), samples[0].host.cpus


def wait_quiet(
    sampler: Any, max_wait_s: float, quiet_for_s: float = 2.0, policy: TrustPolicy = DEFAULT_POLICY
) -> tuple[bool, float, float | None]:
    """Wait up to max_wait_s for quiet_for_s seconds of a quiet host: (quiet, waited, busy CPUs)."""
    start = time.monotonic()
    time.sleep(min(quiet_for_s, max_wait_s))
    while True:
        busy = others_busy(sampler, quiet_for_s)
        waited = time.monotonic() - start
        if busy is not None and busy[0] <= policy.others_limit(busy[1]):
            return True, waited, busy[0]
        if waited >= max_wait_s:
            return False, waited, None if busy is None else busy[0]
        time.sleep(0.25)
