"""A figure's whole judgement as one record: its trust and structured reasons (as the judge stored them), the
expectation it was held to (or none, and why), and its one cause with the next step (engine/trust/cause.py)."""

from __future__ import annotations

from dataclasses import replace

from rigcheck.engine.events import Measurement
from rigcheck.engine.trust.cause import Expectation, likely_cause
from rigcheck.engine.trust.judgement import Expected, Judgement

NOTHING_TO_HOLD = "no reference, baseline, peer or history for this figure"


def explained(figure: Measurement, expectation: Expectation | None = None, none_why: str = "") -> Judgement | None:
    """The figure's judgement completed with its expectation and its one cause; None where no judge saw it (no
    telemetry covered it: it has no trust to complete)."""
    judged = Judgement.of(figure.conditions)
    if judged is None:
        return None
    cause = likely_cause(figure, expectation, judgement=judged)
    if expectation is not None and expectation.value:
        held = Expected(expectation.value, expectation.kind, expectation.source, figure.value / expectation.value)
    else:
        held = Expected(none_why=none_why or NOTHING_TO_HOLD)
    return replace(judged, expectation=held, cause=cause.text, next_step=cause.next_step)
