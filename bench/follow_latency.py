"""From an event written by an engine to the app's panel showing it: latency through the store.

Usage: python bench/follow_latency.py [EVENTS] [RATE_HZ]
A writer process stands in for the engine: it owns a live run and writes log lines, progress and
figures into the store at RATE_HZ, each stamped with the wall clock at the moment it was made. The
real app, headless (Textual's test driver renders every frame), opens on that run as it would on a
live one; the time is taken when the app has handed each event to its panel. Prints p50/p95/max.
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fakes import FakeSampler, h200_samples
from rigcheck.engine.events import LogLine
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp

WRITER = """
import sys, time
from rigcheck.engine.events import LogLine, Measurement, Progress, RunFinished, StageStarted
from rigcheck.engine.store import Store
store = Store(sys.argv[1])
count, rate = int(sys.argv[2]), float(sys.argv[3])
run_id = store.begin_run(["ok"], "cpu", "quick", sys.executable, ["bench"])
print(run_id, flush=True)
sys.stdin.readline()  # the app is up and attached
store.record(run_id, StageStarted("ok", "cpu", 0, sys.executable))
for n in range(count):
    store.record(run_id, Progress("ok", n, count, f"step {n}"))
    store.record(run_id, LogLine("ok", f"line {n}"))
    if n % 10 == 0:
        store.record(run_id, Measurement("ok", f"figure {n}", float(n), "units", device="cpu"))
    time.sleep(1.0 / rate)
store.record(run_id, RunFinished(run_id, "complete", 0))
store.end_run(run_id, "complete", 0)
"""


async def measure(count: int, rate: float) -> list[float]:
    folder = Path(tempfile.mkdtemp(prefix="rigcheck-latency-"))
    store = Store(folder / "s.db")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(store.path), str(count), str(rate)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout is not None and writer.stdin is not None
    run_id = int(writer.stdout.readline())
    delays: list[float] = []
    app = RigcheckApp(store, FakeSampler(h200_samples()), device="cpu")
    shown = app._show_event

    def timed(event: object) -> None:
        shown(event)
        if isinstance(event, LogLine):
            delays.append(time.time() - event.t)

    app._show_event = timed  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.run_id == run_id, "the app did not open on the live run"
        writer.stdin.write("go\n")
        writer.stdin.flush()
        while writer.poll() is None or app.running:
            await pilot.pause(0.05)
    return delays


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rate = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    delays = sorted(asyncio.run(measure(count, rate)))
    ms = [d * 1000 for d in delays]
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    print(f"{len(ms)} log lines at {rate:g}/s (with progress and a figure every 10): engine write -> panel")
    print(f"p50 {statistics.median(ms):.0f} ms  p95 {p95:.0f} ms  max {ms[-1]:.0f} ms")


if __name__ == "__main__":
    main()
