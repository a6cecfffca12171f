"""One rank of the links stage's collectives: run each collective, check it exactly, time it, report.

Started as `python -m rigcheck.engine.stages.links.worker FD CONFIG_JSON` by links_collectives, one
process per GPU (or two on the CPU). It writes one JSON line per event to FD. Values are small
integers held in float32, so every sum is exact and any wrong element is a real fault.

With `store_host` in its config the rank joins a group formed on a store that already exists (a fleet
run's torchrun store), under `store_prefix`, as global `rank` of `world`; it then shares its per-call
times (max) and wrong count (sum) with every rank, and keeps its progress in the store so a host whose
own ranks are all stuck can still learn which rank elsewhere stopped answering.
"""

from __future__ import annotations

import inspect
import json
import os
import signal
import sys
import time
from datetime import timedelta
from typing import Any, TextIO

from rigcheck.engine.measure.busbw import size_label
from rigcheck.engine.stages.common.parent_death import die_with_parent

SPREAD = 7  # elements cycle through 0..6, so sums stay small integers
RANK_STRIDE = 16  # all_gather/all_to_all inputs carry their rank: 16 * rank + (i % 7)


class Reporter:
    """Writes this rank's JSON lines, flushed one by one so the stage sees how far each rank got."""

    def __init__(self, out: TextIO, rank: int) -> None:
        self.out, self.rank = out, rank
        self.step = ""
        self.store: Any = None  # a fleet's store: progress is kept there too
        self.progress = 0

    def say(self, kind: str, **fields: Any) -> None:
        self.out.write(json.dumps({"rank": self.rank, "kind": kind, "t": time.time(), **fields}) + "\n")
        self.out.flush()
        self.progress += kind in ("begin", "result", "skip")
        if kind in PROGRESS_KINDS:
            self.keep(kind, fields.get("step", self.step))

    def keep(self, kind: str, step: str = "") -> None:
        """This rank's progress in a fleet's store, where the other hosts can read it."""
        if self.store is not None:
            record = {"n": self.progress, "kind": kind, "step": step, "t": time.time()}
            self.store.set(f"progress/{self.rank}", json.dumps(record))


PROGRESS_KINDS = ("ready", "begin", "result", "skip", "closing", "done")


def fault_for(fault: str, rank: int, collective: str) -> str | None:
    """'wrong:R[:COLL]', 'hang:R[:COLL]' or 'die:R[:COLL]' (a test hook): the fault this rank injects here, or None."""
    if not fault:
        return None
    parts = fault.split(":")
    kind, target = parts[0], int(parts[1]) if len(parts) > 1 else 1
    where = parts[2] if len(parts) > 2 else None
    return kind if target == rank and where in (None, collective) else None


class Collective:
    """Buffers, the call, and the expected output of one collective at one size on one rank."""

    def __init__(self, torch: Any, dist: Any, name: str, numel: int, rank: int, world: int, device: Any) -> None:
        self.torch, self.dist, self.name = torch, dist, name
        self.rank, self.world, self.device = rank, world, device
        self.numel, self.chunk = numel, numel // world
        self.inp, self.out = self._buffers()

    def _index(self, n: int, offset: int = 0) -> Any:
        return self.torch.arange(offset, offset + n, dtype=self.torch.int64, device=self.device)

    def _pattern(self, n: int, offset: int = 0) -> Any:
        return (self._index(n, offset) % SPREAD).float()

    def _nan(self, n: int) -> Any:
        return self.torch.full((n,), float("nan"), dtype=self.torch.float32, device=self.device)

    def _buffers(self) -> tuple[Any, Any]:
        n, c, r = self.numel, self.chunk, self.rank
        if self.name == "all_reduce":
            buf = self._pattern(n) + (r + 1)
            return buf, buf
        if self.name == "all_gather":
            return self._pattern(c) + RANK_STRIDE * r, self._nan(n)
        if self.name == "reduce_scatter":
            return self._pattern(n) + (r + 1), self._nan(c)
        if self.name == "broadcast":
            buf = self._pattern(n) + 1 if r == 0 else self._nan(n)
            return buf, buf
        if self.name == "all_to_all":
            return self._pattern(n) + RANK_STRIDE * r, self._nan(n)
        raise ValueError(f"unknown collective {self.name!r}")

    def expected(self) -> Any:
        n, c, r, w = self.numel, self.chunk, self.rank, self.world
        if self.name == "all_reduce":
            return self._pattern(n) * w + w * (w + 1) // 2
        if self.name == "all_gather":
            i = self._index(n)
            return ((i // c) * RANK_STRIDE + (i % c) % SPREAD).float()
        if self.name == "reduce_scatter":
            return self._pattern(c, r * c) * w + w * (w + 1) // 2
        if self.name == "broadcast":
            return self._pattern(n) + 1
        i = self._index(n)
        return ((i // c) * RANK_STRIDE + (r * c + i % c) % SPREAD).float()

    def call(self) -> None:
        dist = self.dist
        if self.name == "all_reduce":
            dist.all_reduce(self.inp)
        elif self.name == "all_gather":
            (getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor)(self.out, self.inp)
        elif self.name == "reduce_scatter":
            (getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor)(self.out, self.inp)
        elif self.name == "broadcast":
            dist.broadcast(self.inp, 0)
        else:
            dist.all_to_all_single(self.out, self.inp)

    def check(self, corrupt: bool) -> dict[str, Any]:
        """Wrong elements against the exact expected values, and the first one, after one call."""
        self.call()
        if corrupt:
            self.out.view(-1)[self.out.numel() // 2] += 1.0
        expected = self.expected()
        bad = self.out != expected
        wrong = int(bad.sum().item())
        first = None
        if wrong:
            index = int(bad.nonzero()[0].item())
            first = {"index": index, "got": float(self.out[index].item()), "expected": float(expected[index].item())}
        return {"wrong": wrong, "first_wrong": first}

    def quiet(self) -> None:
        """Inputs that stay finite however often they are reduced: all_reduce works in place."""
        if self.name == "all_reduce":
            self.inp.zero_()


def time_gpu(torch: Any, coll: Collective, reps: int) -> dict[str, Any]:
    """Per-call times by events on this rank's own stream, calls back to back, and the wall clock around them."""
    stream = torch.cuda.current_stream(coll.device)
    events = [torch.cuda.Event(enable_timing=True) for _ in range(reps + 1)]
    wall0 = time.perf_counter()
    events[0].record(stream)
    for i in range(reps):
        coll.call()
        events[i + 1].record(stream)
    events[-1].synchronize()
    wall = time.perf_counter() - wall0
    times = [events[i].elapsed_time(events[i + 1]) / 1e3 for i in range(reps)]
    total = events[0].elapsed_time(events[-1]) / 1e3
    return {"times": times, "primary_total": total, "check_total": wall, "timer": "events", "check": "wall clock"}


def time_cpu(coll: Collective, reps: int) -> dict[str, Any]:
    """Per-call perf_counter times, and CLOCK_REALTIME (outside perf_counter's clock family) around the same
    calls as the second clock, compared call by call at the median, so one preemption between two clock
    reads, or one NTP step of the wall clock, is not a broken timer."""

    def clock() -> float:
        return time.clock_gettime(time.CLOCK_REALTIME)

    times, checks = [], []
    for _ in range(reps):
        t0, r0 = time.perf_counter(), clock()
        coll.call()
        times.append(time.perf_counter() - t0)
        checks.append(clock() - r0)
    return {
        "times": times,
        "check_times": checks,
        "primary_total": sum(times),
        "check_total": sum(checks),
        "timer": "perf_counter",
        "check": "CLOCK_REALTIME",
    }


def share(torch: Any, dist: Any, times: list[float], wrong: int, device: Any) -> dict[str, Any]:
    """Per call the slowest rank's time and the wrong elements of all ranks, known on every rank: across
    hosts no one process sees every rank's answers (nccl-tests also reports the maximum across ranks)."""
    slowest = torch.tensor(times, dtype=torch.float64, device=device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    total = torch.tensor([float(wrong)], dtype=torch.float64, device=device)
    dist.all_reduce(total)
    return {"times_all": slowest.cpu().tolist(), "wrong_all": int(total.item())}


def init(torch: Any, dist: Any, cfg: dict[str, Any], rep: Reporter) -> Any:
    rank, world = cfg["rank"], cfg["world"]
    device = torch.device(cfg["device"])
    if device.type == "cuda":
        torch.cuda.set_device(device)
    timeout = timedelta(seconds=cfg["pg_timeout"])
    if cfg.get("store_host"):
        # The store exists already (torchrun's); the prefix keeps this group's keys apart from others on it.
        outer = dist.TCPStore(cfg["store_host"], cfg["store_port"], is_master=False, timeout=timeout)
        store = dist.PrefixStore(cfg["store_prefix"], outer)
        rep.store = store
        rep.keep("joining")
    else:
        store = dist.TCPStore("127.0.0.1", cfg["port"], world, rank == 0, timeout=timeout, wait_for_workers=False)
        if rank == 0:
            rep.say("store", port=store.port)
    eager = device.type == "cuda" and "device_id" in inspect.signature(dist.init_process_group).parameters
    extra = {"device_id": device} if eager else {}  # torch < 2.3 has no device_id: the group forms lazily
    dist.init_process_group(cfg["backend"], store=store, rank=rank, world_size=world, timeout=timeout, **extra)
    nccl = None
    if device.type == "cuda":
        try:
            version = torch.cuda.nccl.version()
            nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
        except Exception:  # no NCCL/RCCL in this build
            nccl = None
    rep.say(
        "ready", device=str(device), backend=dist.get_backend(), nccl=nccl, torch=torch.__version__, pid=os.getpid()
    )
    return device


def run_steps(torch: Any, dist: Any, cfg: dict[str, Any], device: Any, rep: Reporter) -> None:
    rank, world = cfg["rank"], cfg["world"]
    for name in cfg["collectives"]:
        for size, reps in cfg["sizes"]:
            numel = size // 4 - (size // 4) % world
            step = f"{name} {size_label(size)}"
            fault = fault_for(cfg.get("fault", ""), rank, name)
            if fault == "hang":
                time.sleep(10**6)  # stops answering before the collective, like a rank stuck elsewhere
            if fault == "die":
                os.kill(os.getpid(), signal.SIGKILL)
            rep.step = step
            rep.say("begin", step=step)
            try:
                coll = Collective(torch, dist, name, numel, rank, world, device)
                checked = coll.check(corrupt=fault == "wrong")
            except (RuntimeError, NotImplementedError) as error:
                if name == "all_to_all" and device.type == "cpu":
                    rep.say(
                        "skip",
                        step=step,
                        bytes=numel * 4,
                        reason=f"gloo has no all_to_all here: {str(error).splitlines()[0]}",
                    )
                    continue
                raise
            coll.quiet()
            for _ in range(cfg["warmup"]):
                coll.call()
            timed = time_gpu(torch, coll, reps) if device.type == "cuda" else time_cpu(coll, reps)
            if cfg.get("store_host"):
                timed |= share(torch, dist, timed["times"], checked["wrong"], device)
            rep.say("result", step=step, collective=name, bytes=numel * 4, **checked, **timed)
            del coll
    rep.step = "closing the group"
    rep.say("closing")  # so a hang while the group is torn down is not blamed on the last collective
    dist.destroy_process_group()


def main(argv: list[str]) -> int:
    die_with_parent()
    out = os.fdopen(int(argv[0]), "w", buffering=1)
    cfg = json.loads(argv[1])
    rep = Reporter(out, cfg["rank"])
    try:
        import torch
        import torch.distributed as dist

        device = init(torch, dist, cfg, rep)
        run_steps(torch, dist, cfg, device, rep)
    except Exception as error:
        rep.say(
            "error", step=rep.step, text=f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
        )
        raise
    rep.say("done")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
