"""The app's cost: CPU of the idle app (telemetry at 10 Hz, plots at 2 Hz idle) and key latency under 200 events/s.

Usage: python bench/tui_perf.py [IDLE_SECONDS] [--idle]
Runs the app headless (Textual's test driver renders every frame but writes no terminal). With --idle,
only the idle figures. Each figure comes with the machine's load average before and after it: on a
shared machine the app's own CPU time still moves with the others' load.
"""

from __future__ import annotations

import asyncio
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fakes import FakeNvml
from rigcheck.engine.run.session import start_sampler
from rigcheck.engine.store import Store
from rigcheck.engine.telemetry.nvml import NvmlSource
from rigcheck.engine.telemetry.sampler import Sampler
from rigcheck.tui.app import RigcheckApp
from stage_infos import fake


def load() -> str:
    return f"{os.getloadavg()[0]:.2f}"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def idle_cost(seconds: float, folder: Path, fake_gpu: bool = False) -> float:
    """Process CPU of the app; with fake_gpu, the sampler also reads an idle GPU through a fake NVML."""
    if fake_gpu:
        sampler = Sampler(interval=0.1, gpus=[NvmlSource(FakeNvml(sm_clock=345, reasons=0x1))]).start()
    else:
        sampler = start_sampler(0.1)
    app = RigcheckApp(Store(folder / "idle.db"), sampler, device="cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(2.0)
        before, start = cpu_seconds(), time.monotonic()
        await asyncio.sleep(seconds)
        used, wall = cpu_seconds() - before, time.monotonic() - start
    sampler.stop()
    return used / wall * 100


async def key_latency(folder: Path, presses: int = 40) -> tuple[list[float], int]:
    sampler = start_sampler(0.1)
    app = RigcheckApp(Store(folder / "busy.db"), sampler, stages=[fake("chatty")], device="cpu")
    handled: list[float] = []
    original = app.action_cycle_profile

    def timed() -> None:
        handled.append(time.monotonic())
        original()

    app.action_cycle_profile = timed  # type: ignore[method-assign]
    latencies = []
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        await pilot.pause(1.5)
        for _ in range(presses):
            before = len(handled)
            pressed = time.monotonic()
            await pilot.press("p")
            while len(handled) == before:
                await asyncio.sleep(0.001)
            latencies.append((handled[-1] - pressed) * 1000)
            await pilot.pause(0.1)
        events = len(app.panel(__import__("rigcheck.tui.widgets.log_panel", fromlist=["LogPanel"]).LogPanel).texts)
        app.action_cancel()
        await pilot.pause(1.0)
    sampler.stop()
    return latencies, events


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    seconds = float(args[0]) if args else 20.0
    with tempfile.TemporaryDirectory() as folder:
        os.environ["RIGCHECK_CONFIG"] = str(Path(folder) / "settings.json")
        before = load()
        idle = asyncio.run(idle_cost(seconds, Path(folder)))
        print(
            f"idle app: {idle:.2f}% of one core over {seconds:.0f} s (telemetry 10 Hz, redraw 2 Hz with no run, "
            f"120x40; load {before}-{load()})",
            flush=True,
        )
        before = load()
        idle_gpu = asyncio.run(idle_cost(seconds, Path(folder), fake_gpu=True))
        print(
            f"idle app plotting an idle GPU (fake NVML, flat 345 MHz): {idle_gpu:.2f}% of one core "
            f"(load {before}-{load()})",
            flush=True,
        )
        if "--idle" in sys.argv:
            return
        latencies, lines = asyncio.run(key_latency(Path(folder)))
    print(
        f"key latency while a stage streams ~200 events/s: median {statistics.median(latencies):.1f} ms, "
        f"max {max(latencies):.1f} ms over {len(latencies)} presses ({lines} log lines received)"
    )


if __name__ == "__main__":
    main()
