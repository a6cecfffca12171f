"""Stages that misbehave on purpose, so tests can see the runner survive each kind of death."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Iterator

from rigcheck.engine.events import Event, Measurement, Progress, Status, Verdict
from rigcheck.engine.stage import StageContext


def ok(context: StageContext) -> Iterator[Event]:
    stage = context.spec.stage
    yield Progress(stage, 1, 2, "working")
    yield Measurement(stage, "answer", 42.0, "units", spread=0.5, repeats=3, device=context.spec.device)
    yield Verdict(stage, "works", Status.PASS, "it worked", {"answer": 42})


def segfault(context: StageContext) -> Iterator[Event]:
    yield Progress(context.spec.stage, 1, 2, "about to crash")
    print("fake GPU runtime: initialising queue 7", flush=True)
    os.kill(os.getpid(), signal.SIGSEGV)


def abort(context: StageContext) -> Iterator[Event]:
    yield Progress(context.spec.stage, 1, 2, "about to abort")
    print("fake runtime: assertion failed in hipMemcpy", flush=True)
    os.abort()


def hang(context: StageContext) -> Iterator[Event]:
    yield Progress(context.spec.stage, 1, 2, "hanging")
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])  # like a kernel stuck in C code
    while True:
        time.sleep(0.05)


def polite_wait(context: StageContext) -> Iterator[Event]:
    """Sleeps until cancelled, checking the flag the way real stages do."""
    yield Progress(context.spec.stage, 1, 2, "waiting")
    while not context.cancelled:
        time.sleep(0.02)
    yield Verdict(context.spec.stage, "wait", Status.SKIP, "stopped on request")


def slow(context: StageContext) -> Iterator[Event]:
    yield Progress(context.spec.stage, 1, 2, "sleeping")
    time.sleep(float(context.spec.option("seconds", 30)))
    yield Verdict(context.spec.stage, "slow", Status.PASS, "woke up")


def raises(context: StageContext) -> Iterator[Event]:
    yield Progress(context.spec.stage, 1, 2, "about to raise")
    raise RuntimeError("HIP error: invalid device function")


def fails(context: StageContext) -> Iterator[Event]:
    yield Verdict(context.spec.stage, "check", Status.FAIL, "wrong answer", {"error": 10.0})


def exits(context: StageContext) -> Iterator[Event]:
    yield Progress(context.spec.stage, 1, 2, "exiting")
    sys.stdout.flush()
    os._exit(7)


def timed(context: StageContext) -> Iterator[Event]:
    """A 'throughput' figure measured over 1.5 s of sleeping, so only other processes load the host."""
    start = time.time()
    time.sleep(1.5)
    yield Measurement(context.spec.stage, "rate", 100.0, "ops/s", spread=1.0, repeats=5, t_start=start)
    yield Verdict(context.spec.stage, "timed", Status.PASS, "measured")


def chatty(context: StageContext) -> Iterator[Event]:
    """Streams about 200 events a second (progress and log lines) until cancelled or 60 s pass."""
    from rigcheck.engine.events import LogLine

    stage = context.spec.stage
    end = time.monotonic() + float(context.spec.option("seconds", 60))
    n = 0
    while time.monotonic() < end and not context.cancelled:
        n += 1
        yield Progress(stage, n % 1000, 1000, f"event {n}") if n % 2 else LogLine(stage, f"line {n}")
        time.sleep(0.005)
    yield Verdict(stage, "chatty", Status.PASS, f"sent {n} events")


def per_gpu(context: StageContext) -> Iterator[Event]:
    """One second (option `seconds`) of 'work' per child; cuda:1 crashes; the figure is slower on cuda:2 when asked."""
    spec = context.spec
    device, parts = spec.device, spec.option("parts", "all")
    start = time.time()
    if device == "cuda:1" and spec.option("crash_cuda1", False):
        os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(float(spec.option("seconds", 1.0)))
    value = 700.0 * (0.85 if device == "cuda:2" and spec.option("slow_cuda2", False) else 1.0)
    params = {"bound": "compute", "parts": parts, "threads": 1}
    conditions = {"trust": "TRUSTED", "gpu_name": "FakeGPU", "utilization_mean_pct": 99.0}
    yield Measurement(spec.stage, "matmul bf16 4096", value, "TFLOP/s", 1.0, 5, device, params, conditions, start)
    yield Verdict(
        spec.stage, "done", Status.PASS, f"{device} ({parts}) at {start:.3f}", {"start": start}, device=device
    )


def warns(context: StageContext) -> Iterator[Event]:
    stage = context.spec.stage
    yield Measurement(stage, "rate", 100.0, "ops/s", spread=1.0, repeats=5, device=context.spec.device)
    sentence = (
        "it worked, but [only just]: 3 of 4 tries gave the same answer, and a run on a quiet host is needed "
        "before this figure can be trusted for anything"
    )
    yield Verdict(stage, "shaky", Status.WARN, sentence, device=context.spec.device)


def skips(context: StageContext) -> Iterator[Event]:
    yield Verdict(context.spec.stage, "nothing", Status.SKIP, "nothing to do here")


def _verdict_then_wait(context: StageContext, status: Status) -> Iterator[Event]:
    """One verdict early, then work that lasts until cancelled (or 60 s): the stage's end is not known yet."""
    stage = context.spec.stage
    yield Progress(stage, 0, 2, "first check")
    yield Verdict(stage, "first", status, f"first check: {status.value}")
    yield Progress(stage, 1, 2, "second check")
    end = time.monotonic() + 60
    while not context.cancelled and time.monotonic() < end:
        time.sleep(0.02)


def pass_then_wait(context: StageContext) -> Iterator[Event]:
    yield from _verdict_then_wait(context, Status.PASS)


def fail_then_wait(context: StageContext) -> Iterator[Event]:
    yield from _verdict_then_wait(context, Status.FAIL)


def nap(context: StageContext) -> Iterator[Event]:
    """Three seconds of work in steps, with a progress event and a figure each step, for followers to watch. With
    the option `release` (a path), its steps wait until that file exists (two minutes at most), so a test can hold
    the run live until its followers are in."""
    stage = context.spec.stage
    release = context.spec.option("release")
    if release:
        yield Progress(stage, 0, 6, "waiting to be released")
        deadline = time.monotonic() + 120
        while not os.path.exists(release) and not context.cancelled and time.monotonic() < deadline:
            time.sleep(0.02)
    for step in range(1, 7):
        if context.cancelled:
            break
        time.sleep(0.5)
        yield Progress(stage, step, 6, f"step {step}")
        yield Measurement(stage, f"step {step}", float(step), "steps", device=context.spec.device)
    yield Verdict(stage, "nap", Status.PASS, "slept")


def lone_h200(context: StageContext) -> Iterator[Event]:
    """One H200 figure at the value asked for, with the conditions asked for: a lone GPU, no peers."""
    spec = context.spec
    conditions = {"trust": "TRUSTED", "gpu_name": "NVIDIA H200", "samples": 10} | dict(spec.option("conditions", {}))
    params = {"bound": "compute", "threads": 1, "timer": "events"} | dict(spec.option("params", {}))
    value = float(spec.option("value", 780.0))
    yield Measurement(spec.stage, "matmul bf16 4096", value, "TFLOP/s", 1.0, 5, spec.device, params, conditions)


def dirty(context: StageContext) -> Iterator[Event]:
    """Changes what a stage may change in its process and leaves it changed, as a careless stage would."""
    import torch

    torch.set_num_threads(1)
    torch.backends.cuda.matmul.allow_tf32 = not torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.benchmark = True
    torch.set_float32_matmul_precision("medium")
    os.environ["RIGCHECK_LEFT_BEHIND"] = "1"
    sys.path.append("/nonexistent/left/behind")
    yield Verdict(context.spec.stage, "dirty", Status.PASS, "left things changed")


def state(context: StageContext) -> Iterator[Event]:
    """Reports the process-wide settings a stage starts with."""
    import torch

    seen = {
        "pid": os.getpid(),
        "threads": torch.get_num_threads(),
        "allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn_benchmark": torch.backends.cudnn.benchmark,
        "precision": torch.get_float32_matmul_precision(),
        "left_env": os.environ.get("RIGCHECK_LEFT_BEHIND"),
        "left_path": "/nonexistent/left/behind" in sys.path,
    }
    yield Verdict(context.spec.stage, "state", Status.PASS, "what this stage started with", seen)


def where(context: StageContext) -> Iterator[Event]:
    """Reports the CPUs and torch threads this stage runs on, with a figure for the runner to label."""
    import torch

    seen = {"cpus": sorted(os.sched_getaffinity(0)), "threads": torch.get_num_threads(), "pid": os.getpid()}
    yield Measurement(context.spec.stage, "rate", 1.0, "ops/s", device=context.spec.device, params=dict(seen))
    yield Verdict(context.spec.stage, "where", Status.PASS, "where this stage ran", seen)


def pins_itself(context: StageContext) -> Iterator[Event]:
    """Moves itself to CPU 0 with one torch thread, and leaves it so."""
    import torch

    os.sched_setaffinity(0, [0])
    torch.set_num_threads(1)
    yield Verdict(context.spec.stage, "pinned", Status.PASS, "left on CPU 0", {"pid": os.getpid()})


def health_facts(context: StageContext) -> Iterator[Event]:
    """The health stage's facts for one GPU (the gate's history test): its lifetime correctable ECC count
    from $FAKE_HEALTH_ECC, as a full run's health stage stores them."""
    from rigcheck.engine.events import Facts

    ecc = {"aggregate_corrected": int(os.environ["FAKE_HEALTH_ECC"]), "volatile_uncorrected": 0}
    gpu = {"label": "cuda:1", "index": 1, "ecc": ecc, "extra": {"uuid": "GPU-00000000-0000-0000-0000-000000000001"}}
    yield Facts("health", {"gpus": [gpu]})
    yield Verdict("health", "ecc", Status.PASS, "cuda:1 has no uncorrectable ECC errors", device="cuda:1")


def preload_seen(context: StageContext) -> Iterator[Event]:
    """Reports whether the warm child's import of torch._dynamo is still going while this stage starts."""
    import threading

    alive = any(t.name == "rigcheck-preload" and t.is_alive() for t in threading.enumerate())
    module = sys.modules.get("torch._dynamo")
    loaded = module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False)
    yield Verdict(
        context.spec.stage,
        "preload",
        Status.PASS,
        "the preload as this stage saw it",
        {"alive": alive, "loaded": loaded},
    )
