"""Judge one stage's figures, once, in one call: peers across devices, the GPU against the CPU, the reference
table (or the user's baseline) and the expectations (links, history, what had no reference). The runner emits
what this yields; nothing else loops over a stage's figures to judge them."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Measurement, Verdict
from rigcheck.engine.measure.speedup import gpu_over_cpu
from rigcheck.engine.trust.expectations import expectation_verdicts
from rigcheck.engine.trust.history import History
from rigcheck.engine.trust.peers import peer_verdicts
from rigcheck.engine.trust.reference import reference_verdicts


@dataclass(frozen=True)
class StageFigures:
    """What a stage's figures are judged with: the devices its children ran on, the peers' tolerance, the user's
    baseline (--baseline), each figure's earlier clean values, and every figure of the run so far."""

    stage: str
    figures: Sequence[Measurement]
    devices: frozenset[str]
    peer_tolerance: float
    baseline: dict[str, Any] | None = None
    history: History | None = None
    run_figures: Sequence[Measurement] = ()


def judge_stage(given: StageFigures) -> Iterator[Verdict]:
    """Every verdict on the stage's figures, in the order a run has always given them."""
    figures, stage = list(given.figures), given.stage
    if len(given.devices) > 1:
        yield from peer_verdicts(figures, stage, given.peer_tolerance)
        if "cpu" in given.devices:
            yield from gpu_over_cpu(figures, stage)
    yield from reference_verdicts(figures, stage, given.baseline)
    yield from expectation_verdicts(  # issue 32: links, history, and what had no reference
        figures, stage, given.baseline, given.history, run_figures=list(given.run_figures)
    )
