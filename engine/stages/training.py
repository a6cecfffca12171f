"""Training throughput of the board network: GPU against CPU, fp32 and bf16 autocast, optionally compiled."""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Iterator
from contextlib import nullcontext
from typing import Any, cast

import torch
from rigcheck.engine.events import Event, Measurement, Progress, Status, Verdict
from rigcheck.engine.measure.repeats import enough, relative_spread
from rigcheck.engine.measure.speedup import gpu_over_cpu
from rigcheck.engine.measure.stats import clocks_disagree
from rigcheck.engine.models.board_net import BoardNet, BoardNetConfig, loss_fn, parameter_count, random_batch
from rigcheck.engine.stage import StageContext
from rigcheck.engine.stages.common.devices import resolve_devices
from rigcheck.engine.stages.common.figures import checked, device_identity
from rigcheck.engine.stages.common.limits import cpu_training_limit
from rigcheck.engine.stages.common.oom import does_not_fit
from rigcheck.engine.stages.common.timing import BENCHMARK_VERSION, CHECK_CLOCK, both_clocks, on_device, synchronize
from rigcheck.engine.stages.training_cpu import CpuBudget

STAGE = "training"
BLOCKS = 6
GPU_PLAN = {
    "quick": ([64], [256, 1024], ["fp32", "bf16"]),
    "standard": ([64, 128], [256, 1024, 4096, 8192], ["fp32", "bf16"]),
    "full": ([64, 128], [256, 1024, 4096, 8192], ["fp32", "bf16"]),
}
CPU_PLAN = {
    "quick": ([64], [256], ["fp32"]),
    "standard": ([64, 128], [256, 1024], ["fp32"]),
    "full": ([64, 128], [256, 1024, 4096], ["fp32"]),
}


CHUNK_S = 0.08  # steps are timed in chunks of about this long; the figure stops once its chunks agree
MIN_CHUNKS = 3
MIN_SECONDS = 0.25
MAX_SECONDS = 1.0
LONG_STEP_S = 2 * CHUNK_S  # a first CPU step this long: the steps after it need no sizing step to make chunks


def train_rate(
    channels: int,
    batch: int,
    precision: str,
    device: torch.device,
    compiled: bool = False,
    min_seconds: float = MIN_SECONDS,
    max_seconds: float = MAX_SECONDS,
) -> tuple[float, int, float, dict[str, Any]]:
    """(samples/s, timed steps, start time, extras) for SGD steps on random boards.

    The steps run in chunks of about CHUNK_S, with no synchronisation between them (it would drain the GPU's
    queue): after at least MIN_CHUNKS chunks, the figure stops once its last MIN_CHUNKS agree within 3% and it
    has run `min_seconds`, or at `max_seconds`. The wall clock times the loop; a second clock checks it: the
    device's events on a GPU, CLOCK_REALTIME on the CPU (outside perf_counter's clock family). Their
    disagreement, if any, is in extras["timer_disagrees"].
    """
    torch.manual_seed(0)
    model = BoardNet(BoardNetConfig(channels, BLOCKS)).to(device).train()
    data = random_batch(batch, device)
    if compiled:
        model = model.to(memory_format=torch.channels_last)  # type: ignore[call-overload]  # not in torch's stubs
        data = (data[0].contiguous(memory_format=torch.channels_last), *data[1:])
        model = cast(BoardNet, torch.compile(model))  # an OptimizedModule: BoardNet's calls and attributes
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16) if precision == "bf16" else nullcontext()

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = loss_fn(model, *data)
        loss.backward()
        optimizer.step()

    for _ in range(3 if compiled else 0):
        step()
    warm = time.perf_counter()
    step()
    synchronize(device)
    if device.type == "cpu" and time.perf_counter() - warm >= LONG_STEP_S:
        per_chunk = 1  # a chunk is one step whatever a sizing step says: a slow host spends none on it
    else:
        sized = time.perf_counter()  # the last warm-up step, timed alone, sizes the chunks
        step()
        synchronize(device)
        per_chunk = max(1, round(CHUNK_S / max(time.perf_counter() - sized, 1e-6)))
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    marks = ChunkMarks(device)
    start = time.time()
    t0, r0 = both_clocks()
    marks.mark()
    steps = 0
    while True:
        for _ in range(per_chunk):
            step()
        steps += per_chunk
        marks.mark()
        if enough(marks.finished(), time.perf_counter() - t0, MIN_CHUNKS, min_seconds, max_seconds):
            break
    synchronize(device)
    t1, r1 = both_clocks()
    elapsed = t1 - t0
    chunks = marks.finished(every=True)
    if device.type == "cuda":
        # the first mark was queued just before t0, so the events must fit inside the wall time
        disagrees = clocks_disagree(sum(chunks), elapsed, "events", "wall clock")
    else:
        disagrees = clocks_disagree(elapsed, r1 - r0, "perf_counter", CHECK_CLOCK)
    extras: dict[str, Any] = {
        "parameters": parameter_count(model),
        "timer_disagrees": disagrees,
        "chunks": len(chunks),
        "chunk_spread": spread if math.isfinite(spread := relative_spread(chunks)) else None,
    }
    if device.type == "cuda":
        _, total = torch.cuda.mem_get_info(device)
        extras["peak_memory_share"] = torch.cuda.max_memory_allocated(device) / total
    extras["threads"] = torch.get_num_threads() if device.type == "cpu" else 1
    return batch * steps / elapsed, steps, start, extras


class ChunkMarks:
    """The ends of timed chunks: device events on a GPU (read one chunk behind, so the queue never drains),
    perf_counter on the CPU; the durations of the chunks known to have finished."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.events: list[torch.cuda.Event] = []
        self.times: list[float] = []

    def mark(self) -> None:
        if self.device.type == "cuda":
            event = torch.cuda.Event(enable_timing=True)
            event.record(torch.cuda.current_stream(self.device))
            self.events.append(event)
        else:
            self.times.append(time.perf_counter())

    def finished(self, every: bool = False) -> list[float]:
        """Seconds of each finished chunk; on a GPU, all but the last one queued unless `every` (then it waits)."""
        if self.device.type != "cuda":
            return [b - a for a, b in itertools.pairwise(self.times)]
        done = self.events if every else self.events[:-1]
        if len(done) < 2:
            return []
        done[-1].synchronize()
        return [a.elapsed_time(b) / 1000.0 for a, b in itertools.pairwise(done)]


def one(channels: int, batch: int, precision: str, device: torch.device, compiled: bool = False) -> Iterator[Event]:
    tag = f"c{channels} b{batch} {precision}" + (" compiled" if compiled else "")
    try:
        rate, steps, start, extras = train_rate(channels, batch, precision, device, compiled)
    except torch.OutOfMemoryError as error:
        torch.cuda.empty_cache()
        yield does_not_fit(STAGE, tag, device, f"{tag} on {device}", error)
        return
    params: dict[str, Any] = (
        {
            "channels": channels,
            "batch": batch,
            "precision": precision,
            "compiled": compiled,
            "steps": steps,
            "bound": "compute" if device.type == "cuda" else "host",
            "benchmark_version": BENCHMARK_VERSION,
        }
        | extras
        | device_identity(device)
    )
    timer_reason = params.pop("timer_disagrees")
    figure = Measurement(STAGE, f"train {tag}", rate, "samples/s", None, steps, str(device), params, t_start=start)
    limit = cpu_training_limit(channels, precision) if device.type == "cpu" else None
    yield from checked(figure, None, limit, timer_reason)


def run(context: StageContext) -> Iterator[Event]:
    spec = context.spec
    devices = yield from resolve_devices(STAGE, spec.device)
    if not devices:
        return
    cpu = torch.device("cpu")
    gpus = [d for d in devices if d.type == "cuda"]
    parts = spec.option("parts", "all")  # "gpu" when the CPU arm runs once, in a child of its own
    plans = [(d, *GPU_PLAN[spec.profile]) for d in gpus]
    if parts != "gpu":
        plans.append((cpu, *CPU_PLAN[spec.profile]))
    total = sum(len(c) * len(b) * len(p) for _, c, b, p in plans)
    figures: list[Measurement] = []
    done = 0
    budget = CpuBudget.of(spec.profile)  # the CPU arm's: a slow host's CPU never grows the run past it
    for device, channel_list, batches, precisions in plans:
        for channels in channel_list:
            for batch in batches:
                for precision in precisions:
                    if context.cancelled:
                        return
                    yield Progress(STAGE, done, total, f"c{channels} b{batch} {precision} on {device}")
                    done += 1
                    tag = f"c{channels} b{batch} {precision}"
                    skip = budget.skip(channels, batch, tag, STAGE) if device.type == "cpu" else None
                    if skip is not None:
                        yield skip
                        continue
                    started = time.perf_counter()
                    with on_device(device):
                        for event in one(channels, batch, precision, device):
                            if isinstance(event, Measurement):
                                figures.append(event)
                                if device.type == "cpu":
                                    budget.spent(channels, batch, time.perf_counter() - started, event.repeats or 1)
                            yield event
    if spec.option("compile", False) and gpus:
        yield Progress(STAGE, done, total, "torch.compile c128 b4096 bf16")
        with on_device(gpus[0]):
            yield from one(128, 4096, "bf16", gpus[0], compiled=True)
    yield from gpu_over_cpu(figures, STAGE)
    if not gpus:
        yield from throughput_verdict(figures)


UNSTABLE_SPREAD = 0.25  # chunks of one figure spread more than this share of their median: it is no best


def throughput_verdict(figures: list[Measurement]) -> Iterator[Verdict]:
    """The best CPU training figure: NOT JUDGED here (each figure is judged apart, against the share of its limit a
    CPU with the same vector units reached, where the table holds one), or
    INCONCLUSIVE where every figure's chunks spread too much to mean anything; never a PASS."""
    sound = [m for m in figures if not m.params.get("broken")]
    steady = [m for m in sound if (m.params.get("chunk_spread") or 0.0) <= UNSTABLE_SPREAD]
    best = max(steady, key=lambda m: m.value, default=None)
    if best is not None:
        yield Verdict(
            STAGE,
            "throughput",
            Status.NOT_JUDGED,
            f"best {best.value:,.0f} samples/s ({best.name}) on cpu; the best alone is not judged: each figure is, "
            "against the share of its limit a CPU with the same vector units reached, where the table holds one",
            {"value": best.value, "figure": best.name},
            device="cpu",
        )
    elif sound:
        spreads = ", ".join(f"{m.name} {m.params['chunk_spread']:.0%}" for m in sound)
        yield Verdict(
            STAGE,
            "throughput",
            Status.INCONCLUSIVE,
            f"no best training rate on cpu: could not be judged: every figure's chunks spread more than "
            f"{UNSTABLE_SPREAD:.0%} of their median ({spreads}); next: run it again on a quiet host "
            "(`--wait-quiet 120`)",
            {"unstable": [m.name for m in sound]},
            device="cpu",
        )
