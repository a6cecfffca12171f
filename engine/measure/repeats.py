"""How many repeats a figure needs: enough that they agree, so quiet machines finish sooner and noisy ones
get more samples, between a floor and a ceiling rather than a fixed count."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import median

TARGET_SPREAD = 0.03  # repeats within 3% of their median agree well enough to stop


def relative_spread(durations: Sequence[float]) -> float:
    """(slowest - fastest) / median of the repeats; infinite for fewer than two or a zero median."""
    if len(durations) < 2:
        return float("inf")
    middle = median(durations)
    return (max(durations) - min(durations)) / middle if middle > 0 else float("inf")


def enough(
    durations: Sequence[float],
    elapsed_s: float,
    min_repeats: int,
    min_seconds: float,
    max_seconds: float,
    target: float = TARGET_SPREAD,
) -> bool:
    """Stop repeating: never before `min_repeats`; then at the ceiling of time, or past `min_seconds` with the
    last `min_repeats` within `target` of each other."""
    if len(durations) < min_repeats:
        return False
    if elapsed_s >= max_seconds:
        return True
    if elapsed_s < min_seconds:
        return False
    return relative_spread(durations[-min_repeats:]) <= target
