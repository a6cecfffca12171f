"""The nccl-tests arithmetic for collectives (algbw, busbw, bytes counted for the whole array), stdlib only."""

from __future__ import annotations

COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all")


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' busbw factor: 2(n-1)/n for all_reduce, (n-1)/n for all_gather, reduce_scatter and
    all_to_all, 1 for broadcast."""
    if ranks < 1:
        raise ValueError(f"ranks must be at least 1, got {ranks}")
    if collective == "all_reduce":
        return 2.0 * (ranks - 1) / ranks
    if collective in ("all_gather", "reduce_scatter", "all_to_all"):
        return (ranks - 1) / ranks
    if collective == "broadcast":
        return 1.0
    raise ValueError(f"unknown collective {collective!r}; known: {', '.join(COLLECTIVES)}")


def algbw(size_bytes: float, seconds: float) -> float:
    """Bytes per second for `size_bytes`, the whole array (all_gather's output, reduce_scatter's input)."""
    return size_bytes / seconds


def busbw(collective: str, ranks: int, size_bytes: float, seconds: float) -> float:
    return algbw(size_bytes, seconds) * bus_factor(collective, ranks)


def size_label(size_bytes: int) -> str:
    if size_bytes >= 2**30 and size_bytes % 2**30 == 0:
        return f"{size_bytes >> 30} GiB"
    if size_bytes >= 2**20 and size_bytes % 2**20 == 0:
        return f"{size_bytes >> 20} MiB"
    return f"{size_bytes} B"


def max_across_ranks(per_rank: list[list[float]]) -> list[float]:
    """Per call, the slowest rank's time (nccl-tests reports the maximum across ranks)."""
    return [max(times) for times in zip(*per_rank, strict=True)]
