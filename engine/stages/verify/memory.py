"""Verify's memory checks: allocate and free in cycles, torch's free/total against the driver's, peak share."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.facts.nvidia_driver import nvidia_driver
from rigcheck.engine.stages.common.oom import classify, read_memory

STAGE = "verify"
CHUNK = 2**30


def driver_total(index: int) -> int | None:
    devices = nvidia_driver().get("devices") or []
    return devices[index].get("memory_total") if index < len(devices) else None


def fill_and_check(device: torch.device, target: int) -> str | None:
    """Allocate `target` bytes in 1 GiB chunks, write each, read back a sample: a problem, or None."""
    chunks: list[torch.Tensor] = []
    try:
        while len(chunks) * CHUNK < target:
            chunks.append(torch.full((CHUNK // 4,), float(len(chunks)), dtype=torch.float32, device=device))
        sums = [c[:: 1 << 16].sum().item() for c in chunks]
    except torch.OutOfMemoryError as error:
        return f"out of memory after {len(chunks)} GiB: {str(error)[:120]}"
    expected = [float(i) * ((CHUNK // 4) >> 16) for i in range(len(chunks))]
    return None if sums == expected else "allocated memory did not hold the values written"


def check_memory(device: torch.device, share: float, cycles: int = 3) -> Iterator[Verdict]:
    index = device.index or 0
    torch.cuda.empty_cache()
    baseline = torch.cuda.memory_allocated(device)
    free, total = torch.cuda.mem_get_info(device)
    target = int(free * share)
    torch.cuda.reset_peak_memory_stats(device)
    problems: list[str] = []
    for cycle in range(cycles):
        problem = fill_and_check(device, target)  # its locals, and so every chunk, are gone on return
        if problem:
            problems.append(f"cycle {cycle}: {problem}")
        torch.cuda.empty_cache()
        if torch.cuda.memory_allocated(device) != baseline:
            problems.append(f"cycle {cycle}: {torch.cuda.memory_allocated(device) - baseline} bytes not freed")
    peak = torch.cuda.max_memory_allocated(device)
    free_after, _ = torch.cuda.mem_get_info(device)
    numbers: dict[str, Any] = {
        "target_bytes": target,
        "peak_bytes": peak,
        "peak_share": peak / total,
        "free_before": free,
        "free_after": free_after,
    }
    status = Status.FAIL if problems else Status.PASS
    said = "; ".join(problems)
    if problems and all("out of memory" in p for p in problems):  # someone else's memory is never a FAIL
        taken = classify(read_memory(device), f"allocating {target / 2**30:.1f} GiB of the {free / 2**30:.1f} free")
        if taken.someone_else:
            status, said = Status.INCONCLUSIVE, f"could not be judged: {taken.words}; {said}"
            numbers |= taken.numbers
    yield Verdict(
        STAGE,
        "memory-cycles",
        status,
        said
        if problems
        else f"{cycles} cycles of allocating {target / 2**30:.0f} GiB, writing and freeing it on {device}: "
        f"peak {peak / total:.0%} of the pool, all returned",
        numbers,
        device=str(device),
    )
    driver = driver_total(index) if torch.version.cuda else None
    if driver:
        gap = (driver - total) / driver
        yield Verdict(
            STAGE,
            "memory-driver",
            Status.PASS if 0 <= gap < 0.05 else Status.WARN,
            f"torch sees {total / 2**30:.2f} GiB on {device}, the driver {driver / 2**30:.2f} GiB "
            f"({gap:.1%} reserved by the driver and runtime)",
            {"torch_total": total, "driver_total": driver, "gap": gap},
            device=str(device),
        )
