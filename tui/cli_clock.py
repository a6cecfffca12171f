"""Elapsed and expected time for `run` and `follow`: each stage's and the whole run's, expected from earlier runs
in the store (the median of a stage's last finished runs on this device and profile), else "no estimate"."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

NO_ESTIMATE = "no estimate"


def duration(seconds: float) -> str:
    """`8 s`, `1m 40s`, `1h 02m`: short enough for a progress line, never a fraction of a second past 10 s."""
    seconds = max(0.0, seconds)
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


@dataclass
class RunClock:
    """What the run is expected to take, stage by stage, and how far along it is."""

    stages: tuple[str, ...] = ()
    expected: Mapping[str, float] = field(default_factory=dict)
    started: float | None = None  # the first stage's start (its event's time)
    finished: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, stages: Iterable[str], expected: Mapping[str, float]) -> RunClock:
        return cls(tuple(stages), dict(expected))

    def stage_expected(self, stage: str) -> str:
        seconds = self.expected.get(stage)
        return f"about {duration(seconds)}" if seconds is not None else NO_ESTIMATE

    def run_expected(self) -> float | None:
        """The whole run's expected time; None where a stage of it has never finished on this device and profile."""
        if not self.stages or any(stage not in self.expected for stage in self.stages):
            return None
        return sum(self.expected[stage] for stage in self.stages)

    def start(self, t: float) -> None:
        if self.started is None:
            self.started = t

    def run_words(self, now: float) -> str:
        """`run 3m 10s of about 5m 08s`, or `run 3m 10s (no estimate)`."""
        so_far = duration(now - self.started) if self.started is not None else duration(0)
        total = self.run_expected()
        return f"run {so_far} of about {duration(total)}" if total is not None else f"run {so_far} ({NO_ESTIMATE})"

    def stage_words(self, stage: str, seconds: float) -> str:
        """`in 1m 34s (expected about 1m 30s)`, or `in 1m 34s (no estimate)`."""
        expected = self.stage_expected(stage)
        return f"in {duration(seconds)} ({'expected ' * (expected != NO_ESTIMATE)}{expected})"

    def plan_words(self) -> str:
        """The line before the first stage: `7 stages, expected about 5m 08s from earlier runs` or `no estimate`."""
        total = self.run_expected()
        count = f"{len(self.stages)} stage{'s' * (len(self.stages) != 1)}"
        if total is not None:
            return f"{count}, expected to take about {duration(total)} (from earlier runs on this device and profile)"
        missing = [stage for stage in self.stages if stage not in self.expected]
        if len(missing) == len(self.stages):
            return f"{count}; {NO_ESTIMATE} for the run (no earlier finished run on this device and profile)"
        return f"{count}; {NO_ESTIMATE} for the run (no earlier finished run of {', '.join(missing)} here)"
