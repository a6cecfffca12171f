"""The one place this package's expectation verdicts (link, CPU, training roofline, history) take a figure's cause.

Each passes the figure, the status its rule would give, and what it was judged against (an `Expectation`) to
`judge`, which quotes the one cause function (engine/trust/cause.py). Where that cause says the figure cannot
judge the hardware (someone else's load, a setting in force below expectation, a broken figure), the verdict is
INCONCLUSIVE with the cause's "could not be judged" words: never a WARN or FAIL, and never a PASS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.trust.cause import Cause, Expectation, likely_cause


@dataclass(frozen=True)
class Judged:
    """A verdict's status after its figure's cause was read, the words to add (empty for a clean PASS), and the
    cause's numbers for the verdict."""

    status: Status
    words: str
    cause: Cause
    numbers: dict[str, Any]


def judge(m: Measurement, graded: Status, expectation: Expectation) -> Judged:
    """`graded` (the rule's status) settled by the figure's one cause: INCONCLUSIVE where the cause is
    unjudgeable; a PASS names a setting in force or the disturbance it met its expectation through; a WARN or
    FAIL quotes the cause and its next step."""
    found = likely_cause(m, expectation)
    numbers: dict[str, Any] = found.numbers()
    numbers |= {"expectation": expectation.value, "expectation_source": expectation.source}
    if found.unjudgeable(graded):
        return Judged(Status.INCONCLUSIVE, found.unjudged_words(), found, numbers | {"would_be": graded.value})
    if graded == Status.PASS:  # a setting in force or someone else's load, though it passed: noted
        noted = "" if found.judges_hardware else found.text
        if found.kind == "outside":
            noted = f"measured while disturbed ({found.text}), and still meets it"
        return Judged(graded, noted, found, numbers | ({"disturbed": True} if found.kind == "outside" else {}))
    return Judged(graded, found.words(), found, numbers)


def joined(head: str, judged: Judged) -> str:
    """The verdict's sentence: its head, then the cause's words where there are any."""
    return f"{head}; {judged.words}" if judged.words else head
