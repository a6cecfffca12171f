"""The multithreaded sgemm race hunt: float32 matmul at 1, 2, 4, ... threads against float64, per library.

Each library's matmul is a callable taking (a, b, threads), so a test can inject a corrupting one.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy

ThreadedMatmul = Callable[[numpy.ndarray, numpy.ndarray, int], numpy.ndarray]


@dataclass
class LibraryRecord:
    name: str
    kernel: str
    corrupted: dict[int, int] = field(default_factory=dict)  # threads -> corrupted trials
    trials: dict[int, int] = field(default_factory=dict)
    worst: dict[int, float] = field(default_factory=dict)

    def bad_threads(self) -> list[int]:
        return sorted(t for t, n in self.corrupted.items() if n)


def thread_counts(cpus: int) -> list[int]:
    counts, n = [], 1
    while n < cpus:
        counts.append(n)
        n *= 2
    return [*counts, cpus]


def corruption_threshold(n: int) -> float:
    """Far above float32 rounding (about 1e-4 at n=1024 for unit normals); corrupted elements are ~10 off."""
    return 1e-3 * math.sqrt(n)


def numpy_matmul(a: numpy.ndarray, b: numpy.ndarray, threads: int) -> numpy.ndarray:
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return a @ b
    with threadpool_limits(limits=threads, user_api="blas"):
        return a @ b


def torch_matmul(a: numpy.ndarray, b: numpy.ndarray, threads: int) -> numpy.ndarray:
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        return (torch.from_numpy(a) @ torch.from_numpy(b)).numpy()
    finally:
        torch.set_num_threads(before)


def hunt(
    libraries: dict[str, tuple[ThreadedMatmul, str]],
    counts: list[int],
    trials: int,
    n: int,
    seed: int = 99,
    cancelled: Callable[[], bool] = lambda: False,
) -> tuple[list[LibraryRecord], bool]:
    """Interleave the libraries at each thread count on the same fresh inputs; (records, reference repeats)."""
    rng = numpy.random.default_rng(seed)
    records = [LibraryRecord(name, kernel) for name, (_, kernel) in libraries.items()]
    threshold = corruption_threshold(n)
    reference_repeats = True
    for threads in counts:
        for _ in range(trials):
            if cancelled():
                return records, reference_repeats
            a = rng.standard_normal((n, n), dtype=numpy.float32)
            b = rng.standard_normal((n, n), dtype=numpy.float32)
            reference = numpy_matmul(a.astype(numpy.float64), b.astype(numpy.float64), 1)
            again = numpy_matmul(a.astype(numpy.float64), b.astype(numpy.float64), 1)
            reference_repeats &= bool(numpy.array_equal(reference, again))
            for record, (matmul, _) in zip(records, libraries.values(), strict=True):
                result = matmul(a, b, threads).astype(numpy.float64)
                error = float(numpy.max(numpy.abs(result - reference))) if numpy.isfinite(result).all() else math.inf
                record.trials[threads] = record.trials.get(threads, 0) + 1
                record.corrupted[threads] = record.corrupted.get(threads, 0) + int(error > threshold)
                record.worst[threads] = max(record.worst.get(threads, 0.0), error)
    return records, reference_repeats


def describe(record: LibraryRecord) -> str:
    bad = record.bad_threads()
    if not bad:
        worst = max(record.worst.values(), default=0.0)
        return f"{record.name} ({record.kernel}) clean at every thread count: worst error {worst:.1e}"
    parts = [f"{record.corrupted[t]} of {record.trials[t]} trials at {t} threads" for t in bad]
    worst = max(record.worst[t] for t in bad)
    return f"{record.name} ({record.kernel}) returned wrong elements in {', '.join(parts)}; worst error {worst:.3g}"


def summary_numbers(record: LibraryRecord) -> dict[str, Any]:
    return {
        "kernel": record.kernel,
        "corrupted": {str(k): v for k, v in record.corrupted.items()},
        "trials": {str(k): v for k, v in record.trials.items()},
        "worst_error": {str(k): v for k, v in record.worst.items()},
    }
