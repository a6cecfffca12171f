"""`rigcheck monitor`: headless live telemetry for every GPU and the host, as text or JSON lines."""

from __future__ import annotations

import json
import sys
import threading

from rigcheck.engine.telemetry.sample import Sample, na
from rigcheck.engine.telemetry.sampler import Sampler


def format_line(sample: Sample) -> str:
    host = sample.host
    parts = [
        f"host load {na(host.load1, '{:.2f}')} | busy {host.busy_cpus:.1f}/{host.cpus} CPUs "
        f"(others {host.others_cpus:.1f}, rigcheck {host.own_cpus:.1f}) | CPU {na(host.cpu_mhz)}"
        f"{f'/{host.cpu_max_mhz:.0f}' if host.cpu_max_mhz else ''} MHz temp {na(host.temperature_c, unit=' C')} "
        f"pkg {na(host.package_power_w, '{:.1f}', ' W')}"
    ]
    for gpu in sample.gpus:
        memory = (
            "N/A"
            if gpu.memory_used is None or not gpu.memory_total
            else f"{gpu.memory_used / 2**30:.1f}/{gpu.memory_total / 2**30:.1f} GiB"
        )
        throttle = f" [{', '.join(gpu.throttle)}]" if gpu.throttle else ""
        parts.append(
            f"gpu{gpu.index} {gpu.name}: {na(gpu.sm_clock_mhz, unit=' MHz')} "
            f"{na(gpu.temperature_c, unit=' C')} "
            f"{na(gpu.power_w, '{:.0f}')}/{na(gpu.power_limit_w, unit=' W')} "
            f"util {na(gpu.utilization_pct, unit='%')} mem {memory}{throttle}"
        )
    return " | ".join(parts)


def monitor(interval: float, count: int | None, as_json: bool) -> int:
    sampler = Sampler(interval=interval, keep_seconds=max(60.0, interval * 10))
    if not as_json:
        for note in sampler.notes:
            print(f"# {note}", file=sys.stderr)
    done = threading.Event()
    seen = 0

    def show(sample: Sample) -> None:
        nonlocal seen
        if done.is_set():
            return
        line = json.dumps(sample.to_dict()) if as_json else format_line(sample)
        print(line, flush=True)
        seen += 1
        if count is not None and seen >= count:
            done.set()

    sampler.add_listener(show)
    sampler.start()
    try:
        done.wait()
    except KeyboardInterrupt:
        pass
    finally:
        sampler.stop()
    return 0
