"""A plain torch.distributed all_reduce loop, written apart from rigcheck, to check the links stage's busbw.

Run in the same call as `rigcheck run links --device all`:

    python bench/links_plain.py --gpus 2 --size-mib 1024 --iters 20

One process per GPU (torch.multiprocessing spawn, a TCP store on 127.0.0.1), NCCL, float32,
per-call CUDA events on each rank's current stream with the calls back to back, the slowest rank
per call (like nccl-tests), median over calls. busbw = algbw x 2(n-1)/n with bytes of the whole
array. `--gloo` runs the same loop on the CPU, for trying the script on a host without GPUs.
It does not import rigcheck.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank: int, world: int, port: int, args: argparse.Namespace, results: dict) -> None:
    gpu = not args.gloo
    device = torch.device(f"cuda:{rank}") if gpu else torch.device("cpu")
    if gpu:
        torch.cuda.set_device(device)
    store = dist.TCPStore("127.0.0.1", port, world, rank == 0, timeout=timedelta(seconds=300))
    dist.init_process_group("nccl" if gpu else "gloo", store=store, rank=rank, world_size=world)
    numel = args.size_mib * 2**20 // 4
    x = torch.zeros(numel, dtype=torch.float32, device=device)
    for _ in range(args.warmup):
        dist.all_reduce(x)
    times = []
    if gpu:
        torch.cuda.synchronize(device)
        stream = torch.cuda.current_stream(device)
        events = [torch.cuda.Event(enable_timing=True) for _ in range(args.iters + 1)]
        events[0].record(stream)
        for i in range(args.iters):
            dist.all_reduce(x)
            events[i + 1].record(stream)
        events[-1].synchronize()
        times = [events[i].elapsed_time(events[i + 1]) / 1e3 for i in range(args.iters)]
    else:
        for _ in range(args.iters):
            t0 = time.perf_counter()
            dist.all_reduce(x)
            times.append(time.perf_counter() - t0)
    slowest = torch.tensor(times, dtype=torch.float64, device=device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    if rank == 0:
        results["times"] = slowest.cpu().tolist()
    dist.destroy_process_group()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=int, default=None, help="ranks (default: every GPU, or 2 with --gloo)")
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--gloo", action="store_true", help="CPU ranks over gloo instead of GPUs over NCCL")
    args = parser.parse_args()
    world = args.gpus or (2 if args.gloo else torch.cuda.device_count())
    manager = mp.Manager()
    results = manager.dict()
    mp.spawn(worker, args=(world, free_port(), args, results), nprocs=world, join=True)
    seconds = statistics.median(results["times"])
    size = args.size_mib * 2**20
    algbw = size / seconds / 1e9
    busbw = algbw * 2 * (world - 1) / world
    nccl = None
    if not args.gloo:
        version = torch.cuda.nccl.version()
        nccl = ".".join(map(str, version)) if isinstance(version, tuple) else str(version)
    print(
        json.dumps(
            {
                "what": "plain all_reduce",
                "ranks": world,
                "bytes": size,
                "iters": args.iters,
                "median_s": seconds,
                "algbw_gbs": round(algbw, 2),
                "busbw_gbs": round(busbw, 2),
                "nccl": nccl,
            }
        )
    )


if __name__ == "__main__":
    main()
