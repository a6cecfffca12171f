"""How long the running stage and the whole run have taken, against what they took in earlier runs.

Expected times are each stage's median over its last finished runs on this device and profile, as the store
keeps them (Store.stage_durations); where a stage never ran there, there is no estimate, and it says so.
"""

from __future__ import annotations

NO_ESTIMATE = "no estimate"


def clock_text(seconds: float) -> str:
    """Elapsed time, exact to the second: 45s, 3m05s, 1h20m05s."""
    whole = max(0, int(seconds))
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m{whole % 60:02d}s"
    return f"{whole // 3600}h{whole % 3600 // 60:02d}m{whole % 60:02d}s"


def duration_text(seconds: float) -> str:
    """A rough wall time: ~45s, ~3m05s, ~1h20m."""
    whole = round(seconds)
    if whole < 60:
        return f"~{whole}s"
    if whole < 3600:
        return f"~{whole // 60}m{whole % 60:02d}s"
    return f"~{whole // 3600}h{whole % 3600 // 60:02d}m"


def expected_words(seconds: float | None) -> str:
    return f"of {duration_text(seconds)}" if seconds is not None else f"({NO_ESTIMATE})"


def run_expected(stages: list[str], durations: dict[str, float]) -> float | None:
    """The whole run's expected time: the sum of its stages' earlier times; None if any stage never ran here."""
    if not stages or any(s not in durations for s in stages):
        return None
    return sum(durations[s] for s in stages)


def time_line(
    now: float,
    run_started: float,
    run_stages: list[str],
    durations: dict[str, float],
    stage: str | None = None,
    stage_started: float | None = None,
) -> str:
    """`matmul 1m12s of ~2m30s · run 3m40s of ~9m05s`; `(no estimate)` where no earlier run says (once, at
    the end, where neither has one: the line fits the Stages panel at 80 columns)."""
    expected = run_expected(run_stages, durations)
    run = f"run {clock_text(now - run_started)} {expected_words(expected)}"
    if stage is None or stage_started is None:
        return run
    stage_expected = durations.get(stage)
    if stage_expected is None and expected is None:
        return f"{stage} {clock_text(now - stage_started)} · run {clock_text(now - run_started)} ({NO_ESTIMATE})"
    return f"{stage} {clock_text(now - stage_started)} {expected_words(stage_expected)} · {run}"
