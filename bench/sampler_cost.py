"""What the telemetry sampler costs: CPU time of a process that only samples, at 10 Hz, over N seconds.

Usage: python bench/sampler_cost.py [SECONDS] [INTERVAL]
"""

from __future__ import annotations

import resource
import sys
import time

from rigcheck.engine.telemetry.sampler import Sampler


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 30.0
    interval = float(sys.argv[2]) if len(sys.argv) > 2 else 0.1
    sampler = Sampler(interval=interval)
    sources = [type(s).__name__ for s in sampler.gpus] or ["host only"]
    before_cpu, before_wall = cpu_seconds(), time.monotonic()
    sampler.start()
    time.sleep(seconds)
    sampler.stop()
    used, wall = cpu_seconds() - before_cpu, time.monotonic() - before_wall
    samples = len(sampler.buffer)
    print(
        f"sampler cost: {used / wall * 100:.2f}% of one core over {wall:.1f} s "
        f"({samples} samples at {interval * 1000:.0f} ms, {used / max(samples, 1) * 1e3:.2f} ms CPU each; "
        f"sources: {', '.join(sources)})"
    )


if __name__ == "__main__":
    main()
