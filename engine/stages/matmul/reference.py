"""The best-of verdicts' judgement (the sweep's best of a dtype, max-find's mean) against the GPU model's reference
figure: PASS within 15% of it, WARN further below, FAIL below half; where no reference is known, it says so."""

from __future__ import annotations

from rigcheck.engine.events import Status
from rigcheck.engine.measure.references import WARN_BELOW, Reference, grade, model_of


def next_step(device_name: str) -> str:
    """What to run first when a matmul rate is low: clocks and power are its usual cause."""
    model = model_of(device_name)
    amd = (model.vendor == "amd") if model else any(w in device_name for w in ("AMD", "Radeon", "Instinct"))
    return "`rocm-smi --showclocks --showpower --showperflevel`" if amd else "`nvidia-smi -q -d PERFORMANCE,POWER`"


def judged(
    value: float, reference: Reference | None, device_name: str, figure: str
) -> tuple[Status, str, str, dict[str, object]]:
    """The status, the citation (", 103% of the H200's published MAMF 794.5"), the words that end the verdict
    (the rule broken, the likely cause and the next step; or that no reference is known) and the numbers."""
    if reference is None:
        words = f"; no reference figure for {device_name}: judged only against peers and history"
        return Status.PASS, "", words, {"model": device_name}
    status, share = grade(value, reference)
    numbers: dict[str, object] = {
        "model": device_name,
        "reference": reference.value,
        "reference_share": round(share, 4),
        "reference_kind": reference.kind,
        "reference_source": reference.source,
    }
    ending = ""
    if status != Status.PASS:
        rule = "below half of" if status == Status.FAIL else f"more than {1 - WARN_BELOW:.0%} below"
        ending = (
            f"; {rule} the reference: likely cause: clocks or power held back, or another process on the GPU "
            f"({figure}'s conditions say which); next: {next_step(device_name)}"
        )
    return status, f", {share:.0%} of {reference.cite()}", ending, numbers
