"""From an event made by an engine to the app's panel showing it: latency of the pushed stream.

Usage: python bench/follow_latency.py [EVENTS] [RATE_HZ]
A writer process stands in for the engine: it owns a live run as OwnedRun does (a control socket
that streams, a telemetry sampler at 10 Hz whose samples are streamed too) and writes log lines,
progress and figures into the store at RATE_HZ, each stamped with the wall clock at the moment it was
made, each pushed to subscribers after its store write. The real app, headless (Textual's test
driver renders every frame), opens on that run as it would on a live one; the time is taken when the
app has handed each event to its panel. Prints p50/p95/max, how many came by the stream, and the
machine's load average before and after (on a shared machine the others' load moves the figures).
"""

from __future__ import annotations

import asyncio
import os
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
from rigcheck.engine.run.control import ControlServer, control_path
from rigcheck.engine.run.session import start_sampler
from rigcheck.engine.run.stream import Broadcast
from rigcheck.engine.store import Store
store = Store(sys.argv[1])
count, rate = int(sys.argv[2]), float(sys.argv[3])
run_id = store.begin_run(["ok"], "cpu", "quick", sys.executable, ["bench"])
sampler = start_sampler(0.1)
stream = Broadcast(store.path, run_id, sampler.notes)
sampler.add_listener(stream.on_sample)
control = ControlServer(control_path(store.path, run_id), lambda op: None, subscribe=stream.subscribe)
print(run_id, flush=True)
sys.stdin.readline()  # the app is up and subscribed

def record(event):  # as OwnedRun's listeners do: the store first, then the stream
    store.record(run_id, event)
    stream.on_event(event)

record(StageStarted("ok", "cpu", 0, sys.executable))
for n in range(count):
    record(Progress("ok", n, count, f"step {n}"))
    record(LogLine("ok", f"line {n}"))
    if n % 10 == 0:
        record(Measurement("ok", f"figure {n}", float(n), "units", device="cpu"))
    time.sleep(1.0 / rate)
record(RunFinished(run_id, "complete", 0))
control.close()
stream.close()
sampler.stop()
"""


async def measure(count: int, rate: float) -> tuple[list[float], int]:
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
        assert app.run_id == run_id and app.link is not None, "the app did not open on the live run"
        follower = app.link.follower
        while not follower.subscribed:
            await pilot.pause(0.05)
        writer.stdin.write("go\n")
        writer.stdin.flush()
        while writer.poll() is None or app.running:
            await pilot.pause(0.05)
    return delays, follower.streamed


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rate = float(sys.argv[2]) if len(sys.argv) > 2 else 20.0
    before = os.getloadavg()[0]
    delays, streamed = asyncio.run(measure(count, rate))
    after = os.getloadavg()[0]
    delays.sort()
    ms = [d * 1000 for d in delays]
    p95 = ms[min(len(ms) - 1, int(0.95 * len(ms)))]
    print(f"{len(ms)} log lines at {rate:g}/s (with progress and a figure every 10): engine write -> panel")
    print(
        f"p50 {statistics.median(ms):.1f} ms  p95 {p95:.1f} ms  max {ms[-1]:.1f} ms ({streamed} events streamed; "
        f"load {before:.2f}-{after:.2f})"
    )


if __name__ == "__main__":
    main()
