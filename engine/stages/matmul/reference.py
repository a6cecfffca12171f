"""The best-of verdicts' judgement (the sweep's best of a dtype, max-find's mean) against the GPU model's reference
figure: PASS within 15% of it, WARN further below, FAIL below half; NOT JUDGED where no reference is known.

The child has no telemetry: it states the rule only. The parent quotes the figure's one cause
(engine/trust/cause.py) into the verdict, and makes it INCONCLUSIVE where the cause lies outside the GPU
(engine/trust/settle.py); `numbers["figure"]` names the figure the verdict speaks of.
"""

from __future__ import annotations

from rigcheck.engine.events import Status
from rigcheck.engine.measure.references import Reference, grade


def judged(
    value: float, reference: Reference | None, device_name: str, figure: str
) -> tuple[Status, str, str, dict[str, object]]:
    """The status, the citation (", 103% of the H200's published MAMF 794.5"), the words that end the verdict
    (the rule broken, or that no reference is known) and the numbers."""
    if reference is None:
        words = f"; not judged: no reference figure for {device_name} (compared only against peers and history)"
        return Status.NOT_JUDGED, "", words, {"model": device_name, "figure": figure}
    status, share = grade(value, reference)
    numbers: dict[str, object] = {
        "model": device_name,
        "figure": figure,
        "reference": reference.value,
        "reference_share": round(share, 4),
        "reference_kind": reference.kind,
        "reference_source": reference.source,
        "reference_cited": reference.cite(),
    }
    ending = ""
    if status != Status.PASS:
        rule = "below half of" if status == Status.FAIL else f"more than {1 - reference.warn_below:.0%} below"
        ending = f"; {rule} the reference"
    return status, f", {share:.0%} of {reference.cite()}", ending, numbers
