"""A GPU training figure with no reference of its own (for its model, network, batch and dtype), judged through a
simple roofline: the board network's conv FLOPs and activation traffic per sample, over this GPU's own matmul and
device-copy figures from the same run, scaled by the share of that roofline the H200 reached (its rigcheck-measured
training, matmul and copy references). The verdict says the roofline was used, and a training figure with a
reference of its own is left to trust/reference.py.

A roofline is a coarse expectation: it names a figure below half of it (a WARN), never fails one; INCONCLUSIVE
where the figure's one cause is someone else's load or a setting in force (engine/trust/expect_words.py).
Standard library only: the parent runs it.
"""

from __future__ import annotations

from collections.abc import Iterable

from rigcheck.engine.events import Measurement, Status, Trust, Verdict
from rigcheck.engine.measure.board_roofline import per_sample, roofline, training_tag
from rigcheck.engine.measure.references import reference_for
from rigcheck.engine.trust.cause import Expectation
from rigcheck.engine.trust.expect_arch import figure_reference
from rigcheck.engine.trust.expect_words import joined, judge
from rigcheck.engine.trust.judgement import trust_in
from rigcheck.engine.trust.reference import device_model

WARN_BELOW = 0.5
MIN_BATCH = 4096  # smaller batches are bound by kernel launches, which no roofline of matmul and copy rates holds
CALIBRATION = "NVIDIA H200"  # the model whose references set the share of the roofline a healthy GPU reaches
__all__ = ["per_sample", "roofline", "training_verdict"]


def matmul_dtype(precision: str) -> str:
    """The matmul figure that bounds its convolutions: bf16 autocast runs bf16; fp32 runs TF32 (cuDNN's default)."""
    return "bf16" if precision == "bf16" else "tf32"


def _own(figures: Iterable[Measurement], device: str, prefix: str) -> float | None:
    """The best sound figure on this device whose name starts with `prefix`."""
    found = [
        m.value
        for m in figures
        if m.device == device and m.name.startswith(prefix) and not m.params.get("broken") and m.value > 0
        and trust_in(m.conditions) in (None, Trust.TRUSTED)
    ]  # fmt: skip
    return max(found) if found else None


def calibrated_share(channels: int, batch: int, precision: str) -> float | None:
    """The share of its roofline the H200's own reference for this network, batch and dtype reached."""
    trained = reference_for(CALIBRATION, f"train c{channels} b{batch} {precision}")
    matmul = reference_for(CALIBRATION, f"matmul {matmul_dtype(precision)} 8192")
    copy = reference_for(CALIBRATION, "device copy 4 GiB")
    if trained is None or matmul is None or copy is None:
        return None
    return trained.value / roofline(channels, precision, matmul.value, copy.value)


def training_verdict(m: Measurement, stage: str, run_figures: list[Measurement]) -> Verdict | None:
    """PASS or WARN against the calibrated roofline; None where the figure has its own reference, is no GPU
    training figure, or this GPU has no matmul or copy figure in this run."""
    tag = training_tag(m.name)
    name = device_model(m)
    if tag is None or name is None or m.params.get("broken") or m.value <= 0:
        return None
    if figure_reference(m) is not None:
        return None  # its model's entry or its architecture's carried share judges it (trust/reference.py)
    channels, batch, precision = tag
    if batch < MIN_BATCH:
        return None
    dtype = matmul_dtype(precision)
    tflops, copy = _own(run_figures, m.device, f"matmul {dtype} "), _own(run_figures, m.device, "device copy ")
    share = calibrated_share(channels, batch, precision)
    if tflops is None or copy is None or share is None:
        return None
    expected = share * roofline(channels, precision, tflops, copy)
    ratio = m.value / expected
    head = (
        f"{m.device} {m.name} {m.value:,.0f} samples/s: {ratio:.0%} of the {expected:,.0f} expected from a roofline "
        f"of its own matmul {dtype} ({tflops:,.4g} TFLOP/s) and device copy ({copy:,.4g} GB/s), at the {share:.0%} "
        "of it the H200 reaches (rigcheck-measured); no reference for this model, network, batch and dtype"
    )
    numbers = {"device": m.device, "value": m.value, "expected": round(expected, 1), "ratio": round(ratio, 4)}
    numbers |= {"basis": "roofline", "matmul_tflops": tflops, "copy_gbs": copy, "calibration": round(share, 4)}
    graded = Status.PASS if ratio >= WARN_BELOW else Status.WARN
    if graded == Status.WARN:
        head += "; below half of it"
    found = judge(m, graded, Expectation(expected, f"a roofline of its own matmul {dtype} and copy", "roofline"))
    text, numbers = joined(head, found), numbers | found.numbers
    return Verdict(stage, f"roofline {m.name}", found.status, text, numbers, 1 - WARN_BELOW, m.device)
