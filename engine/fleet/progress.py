"""Where every rank of a fleet group got to, read from the fleet's store after this host's ranks stopped.

A host whose own ranks all wait inside a collective cannot tell from them which rank elsewhere never
arrived; each worker keeps its progress under `progress/RANK` in the group's prefix, so any host can.
Imports torch only when called (the agent has it already; callers that never time out pay nothing).
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any


def open_store(host: str, port: int, prefix: str, timeout_s: float) -> Any:
    """A client of the fleet's store that sees only the keys under `prefix`."""
    import torch.distributed as dist

    client = dist.TCPStore(host, port, is_master=False, timeout=timedelta(seconds=timeout_s))
    return dist.PrefixStore(prefix, client)


def read_progress(
    host: str, port: int, prefix: str, world: int, timeout_s: float = 5.0
) -> dict[int, dict[str, Any]] | None:
    """{rank: {"n", "kind", "step", "t"}} for each rank that wrote its progress; None when the store cannot be read."""
    try:
        store = open_store(host, port, prefix, timeout_s)
        found = {}
        for rank in range(world):
            key = f"progress/{rank}"
            if store.check([key]):
                record = checked(store.get(key))
                if record is not None:
                    found[rank] = record
        return found
    except Exception:  # the store went with a lost rank 0: the local view is all there is
        return None


def checked(raw: bytes) -> dict[str, Any] | None:
    """A worker's progress as read from the store, which anyone on the network may have written: a whole number
    of steps and an inert step name, or None (taken as never written)."""
    from rigcheck.engine.fleet.schema import inert

    if len(raw) > 4096:
        return None
    try:
        record = json.loads(raw, parse_constant=lambda name: None)
    except (ValueError, UnicodeDecodeError):
        return None
    n = record.get("n") if isinstance(record, dict) else None
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n < 2**53:
        return None
    return {**record, "n": n, "step": inert(str(record.get("step") or ""))[:200]}


def stragglers(progress: dict[int, dict[str, Any]], world: int) -> tuple[list[int], str]:
    """The ranks short of the furthest one (or that never wrote), and the step the furthest one is in."""
    furthest = max(progress.values(), key=lambda p: p["n"], default={"n": 0, "step": ""})
    behind = [r for r in range(world) if r not in progress or progress[r]["n"] < furthest["n"]]
    return behind, str(furthest.get("step") or "")
