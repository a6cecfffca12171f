"""The one place this package's expectation verdicts take a figure's likely cause and next step from.

A single seam: when engine/trust/cause.py (the one cause function) lands, this is the only line to point at it.
"""

from __future__ import annotations

from rigcheck.engine.events import Measurement
from rigcheck.engine.trust.reference import cause_and_next, device_model, vendor_of


def likely_cause(m: Measurement) -> tuple[str, str]:
    """(likely cause, next step) for a figure below its expectation, from its own conditions."""
    return cause_and_next(m, vendor_of(device_model(m) or ""))
