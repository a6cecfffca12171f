"""The one place this package's expectation verdicts take a figure's likely cause and next step from.

A single seam: when engine/trust/cause.py (the one cause function) lands, this is the only line to point at it.
"""

from __future__ import annotations

from rigcheck.engine.events import Measurement
from rigcheck.engine.trust.reference import cause_and_next, device_model, vendor_of


def likely_cause(m: Measurement) -> tuple[str, str]:
    """(likely cause, next step) for a figure below its expectation, from its own conditions."""
    return cause_and_next(m, vendor_of(device_model(m) or ""))


def share_in_words(share: float) -> str:
    """0.5 -> 'half', 0.25 -> 'a quarter'; else a percentage."""
    for value, words in ((0.5, "half"), (0.25, "a quarter"), (0.125, "an eighth"), (0.75, "three quarters")):
        if abs(share - value) < 0.02:
            return words
    return f"{share:.0%}"
