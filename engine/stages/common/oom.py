"""Out of GPU memory: whose memory it was. Someone else's memory is never a FAIL (a SKIP that names the holder);
an out-of-memory error with the GPU otherwise free is rigcheck's own sizes too big, a defect to report.

`classify` is pure (numbers in, a status and words out); `read_memory` reads them in a stage child (torch's free
and total, its own reserve, NVML's process list with what each holds). Torch is imported only where it is read.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.hw.nvml_types import GpuProcess

GIB = 2**30
OTHERS_MIN = 1 * GIB  # memory held beyond rigcheck's own and a context's: someone else holds it
CONTEXT_BYTES = 600 * 2**20  # a CUDA context and its workspaces, which torch's reserve does not count
# torch's own message names the holders it can see: "Process 890 has 77.17 GiB memory in use"
HOLDER_WORDS = re.compile(r"Process (\d+) has ([\d.]+) ([GMK]i?B) memory in use")
UNITS = {"GiB": GIB, "GB": GIB, "MiB": 2**20, "MB": 2**20, "KiB": 2**10, "KB": 2**10}


Holder = GpuProcess  # a process holding GPU memory: NVML's own record (its pid, and bytes or None)


@dataclass(frozen=True)
class MemoryState:
    """The GPU's memory when an allocation failed: total and free (the driver's), rigcheck's own reserve, and the
    other processes holding some (NVML's list, else the ones torch's message names)."""

    total: int | None
    free: int | None
    own: int = 0
    holders: tuple[Holder, ...] = field(default=())

    @property
    def others(self) -> int:
        """Bytes held by processes other than this one: what the driver says is used, less this process's."""
        if self.total is None or self.free is None:
            return sum(h.used_gpu_memory or 0 for h in self.holders)
        return max(0, self.total - self.free - self.own - CONTEXT_BYTES)


@dataclass(frozen=True)
class OomFinding:
    status: Status
    words: str
    numbers: dict[str, Any]

    @property
    def someone_else(self) -> bool:
        return self.status != Status.FAIL


def gib(value: int | None) -> str:
    return "?" if value is None else f"{value / GIB:.1f} GiB"


def holders_from_message(message: str) -> tuple[Holder, ...]:
    """The processes torch's out-of-memory message names, other than this one."""
    found = []
    for pid, amount, unit in HOLDER_WORDS.findall(message):
        if int(pid) != os.getpid():
            found.append(Holder(int(pid), int(float(amount) * UNITS.get(unit, GIB))))
    return tuple(found)


def who(state: MemoryState) -> str:
    """The holders in words: by pid where known, else a process rigcheck cannot see (another container)."""
    named = [
        f"pid {h.pid} ({gib(h.used_gpu_memory)})"
        for h in sorted(state.holders, key=lambda h: -(h.used_gpu_memory or 0))[:3]
    ]
    if named:
        return ", ".join(named)
    return "a process rigcheck cannot see (another container or PID namespace)"


def classify(state: MemoryState, what: str) -> OomFinding:
    """`what` (e.g. "device copy 8 GiB") could not be allocated: SKIP where someone else holds memory, FAIL (a
    defect in rigcheck's sizes) where the GPU was otherwise free."""
    numbers: dict[str, Any] = {"oom": True, "total_bytes": state.total, "free_bytes": state.free}
    numbers["others_bytes"] = state.others
    numbers |= {"holders": [{"pid": h.pid, "used": h.used_gpu_memory} for h in state.holders]}
    listed = sum(h.used_gpu_memory or 0 for h in state.holders)
    if max(state.others, listed) >= OTHERS_MIN:  # a desktop's few MiB is no holder
        return OomFinding(
            Status.SKIP,
            f"{what} skipped: it does not fit in the {gib(state.free)} free; {gib(state.others)} of "
            f"{gib(state.total)} is held by {who(state)}, not rigcheck; next: free that memory (or use another GPU) "
            "and run again",
            numbers | {"someone_else": True},
        )
    return OomFinding(
        Status.FAIL,
        f"{what} ran out of memory with the GPU otherwise free ({gib(state.free)} free of {gib(state.total)}, "
        "no other process holding any): rigcheck asked for more than this GPU has; a defect in rigcheck: "
        "please report it with `rigcheck export last`",
        numbers | {"someone_else": False},
    )


def nvml_holders(bus_id: str | None) -> tuple[Holder, ...]:
    """The other processes NVML lists on the GPU at `bus_id`, with what each holds; empty where it cannot say."""
    from rigcheck.engine.hw import nvml
    from rigcheck.engine.hw.gpu_at import gpu_at

    started = nvml.open_nvml()
    if not isinstance(started, nvml.Nvml):
        return ()
    try:
        handle = gpu_at(started, bus_id)  # hw/ owns a GPU's identity by bus id: None where NVML cannot place it
        if handle is None:
            return ()
        listed = (nvml.ok(started.compute_processes(handle)) or []) + (
            nvml.ok(started.graphics_processes(handle)) or []
        )
        return tuple(p for p in listed if p.pid != os.getpid())
    finally:
        started.close()


def read_memory(device: Any, message: str = "") -> MemoryState:
    """The GPU's memory now, in a stage child (after its failed allocation was let go). Never raises."""
    import torch

    free: int | None
    total: int | None
    try:
        torch.cuda.empty_cache()
        free, total = torch.cuda.mem_get_info(device)
        own = torch.cuda.memory_reserved(device)
    except Exception:
        free = total = None
        own = 0
    try:
        from rigcheck.engine.stages.common.limits import bus_id

        holders = nvml_holders(bus_id(device))
    except Exception:
        holders = ()
    return MemoryState(total, free, own, holders or holders_from_message(message))


def oom_verdict(stage: str, check: str, device: Any, what: str, error: BaseException) -> Verdict:
    """The verdict for `what` that ran out of memory on `device`: SKIP naming the holder, or FAIL (a defect)."""
    finding = classify(read_memory(device, str(error)), what)
    numbers = finding.numbers | {"message": str(error)[:300]}
    return Verdict(stage, check, finding.status, finding.words, numbers, device="" if device is None else str(device))


def does_not_fit(stage: str, check: str, device: Any, what: str, error: BaseException) -> Verdict:
    """A size of a sweep that does not fit: SKIP, naming who holds the memory where someone else does; else "does
    not fit" with torch's words (a GPU smaller than the size, the rest measured)."""
    found = classify(read_memory(device, str(error)), what)
    if found.someone_else:
        return Verdict(stage, check, Status.SKIP, found.words, found.numbers, device=str(device))
    return Verdict(stage, check, Status.SKIP, f"{what} does not fit: {str(error)[:160]}", device=str(device))


def fitting(wanted: int, free: int | None, floor: int = 64 * 2**20, share: float = 0.8) -> int:
    """The largest of wanted, wanted/2, wanted/4, ... (not below `floor`) within `share` of the free memory; 0
    where not even the floor fits; `wanted` where free is unknown."""
    if free is None:
        return wanted
    size = wanted
    while size > free * share and size >= 2 * floor:
        size //= 2
    return size if size <= free * share else 0
