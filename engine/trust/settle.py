"""A stage child's verdict on one of its figures, settled in the parent once the figure's conditions are known.

The child has no telemetry: its best-of and max-find verdicts state the rule only, and name their figure in
`numbers["figure"]`. Here the figure's one cause (engine/trust/cause.py) is quoted into the verdict, and a
verdict whose figure's cause lies outside the hardware (someone else's load, a setting that changes it) becomes
INCONCLUSIVE: "could not be judged: <cause>; next: <step>". A disturbed figure never fails, nor passes, the GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.trust.cause import Expectation, likely_cause
from rigcheck.engine.trust.view import Conditions

JUDGED = (Status.PASS, Status.WARN, Status.FAIL)


def figure_of(verdict: Verdict, figures: Sequence[Measurement]) -> Measurement | None:
    """The annotated figure a verdict speaks of: by name, on its device, the latest of that name."""
    name = verdict.numbers.get("figure") if isinstance(verdict.numbers, dict) else None
    if not name:
        return None
    return next(
        (m for m in reversed(figures) if m.name == name and (not verdict.device or m.device == verdict.device)),
        None,
    )


def settle(verdict: Verdict, figures: Sequence[Measurement]) -> Verdict:
    """The verdict with its figure's one cause in it, INCONCLUSIVE where that cause is not the hardware's."""
    figure = figure_of(verdict, figures)
    if figure is None:
        return verdict
    if verdict.check.startswith("figure "):  # the figure is not a result: its timer broke, or the work was not asked
        return _not_a_result(verdict, figure)
    numbers = verdict.numbers
    reference = numbers.get("reference")
    expectation = None
    if isinstance(reference, (int, float)):
        expectation = Expectation(float(reference), str(numbers.get("reference_cited") or "its reference"))
    found = likely_cause(figure, expectation)
    said = numbers | found.numbers()
    if verdict.status in JUDGED and found.unjudgeable(verdict.status):
        return replace(
            verdict,
            status=Status.INCONCLUSIVE,
            explanation=f"{verdict.explanation}; {found.unjudged_words()}",
            numbers=said | {"would_be": verdict.status.value},
        )
    if verdict.status in (Status.WARN, Status.FAIL):
        return replace(verdict, explanation=f"{verdict.explanation}: {found.words()}", numbers=said)
    if verdict.status in (Status.NOT_JUDGED, Status.PASS) and not found.judges_hardware:
        return replace(verdict, explanation=f"{verdict.explanation}; its figure: {found.text}", numbers=said)
    return verdict


def other_user(figure: Measurement) -> str | None:
    """Words for someone else who worked on the figure's GPU while it was measured, or None: a process rigcheck
    cannot see that worked (or may have), a listed process on the GPU, or a reason outside the hardware."""
    c = Conditions.from_dict(figure.conditions)
    unseen = c.raw.get("unseen_user")
    if isinstance(unseen, dict) and unseen.get("worked") is not False:
        memory = unseen.get("gpu_memory")
        held = f"{memory / 2**20:,.0f} MiB" if isinstance(memory, (int, float)) else str(memory or "memory unknown")
        return f"another process that rigcheck cannot see used {figure.device} ({held})"
    if c.other_gpu_processes:
        named = ", ".join(f"{p.get('name', '?')} (pid {p.get('pid', '?')})" for p in c.other_gpu_processes[:3])
        return f"other processes on {figure.device}: {named}"
    return c.outside[0] if c.outside else None


def _not_a_result(verdict: Verdict, figure: Measurement) -> Verdict:
    """A figure that is not a result FAILs, unless someone else used its GPU meanwhile: a device timer and the wall
    clock around it disagree when another process holds the GPU between them, so that says nothing of this GPU."""
    other = other_user(figure) if verdict.status is Status.FAIL else None
    if other is None:
        return verdict
    return replace(
        verdict,
        status=Status.INCONCLUSIVE,
        explanation=f"{verdict.explanation}; could not be judged: {other}; next: stop it and run again",
        numbers=verdict.numbers | {"would_be": verdict.status.value, "cause_kind": "outside", "cause": other},
    )
