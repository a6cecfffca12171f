"""Summary statistics of repeated timings: median, best, interquartile spread, and whether it is noisy.

Standard library only, so the parent and tests can use it without torch.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

NOISY_SPREAD = 0.05  # interquartile range above 5% of the median


@dataclass(frozen=True)
class TimingStats:
    times: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def iqr(self) -> float:
        if len(self.times) < 4:
            return max(self.times) - min(self.times)
        q1, _, q3 = statistics.quantiles(self.times, n=4, method="inclusive")
        return q3 - q1

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median."""
        return self.iqr / self.median if self.median > 0 else 0.0

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD

    def rate(self, work: float) -> tuple[float, float, float]:
        """(median rate, best rate, spread of the rate in rate units) for `work` units per timing."""
        median_rate = work / self.median
        return median_rate, work / self.best, median_rate * self.spread
