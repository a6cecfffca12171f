"""Which reference, if any, the table keeps for a CPU figure on this host's CPU model: the stage words its best
figure by it, and the parent's expectations judge by it (below both, so neither imports the other)."""

from __future__ import annotations

import functools

from rigcheck.engine.events import Measurement
from rigcheck.engine.facts.host import cpu_facts
from rigcheck.engine.measure.references import Reference, model_of, references_of


@functools.cache
def this_cpu() -> str:
    """The host's CPU model name, as /proc/cpuinfo gives it."""
    return str(cpu_facts().get("model") or "")


def cpu_reference(m: Measurement, cpu_name: str) -> Reference | None:
    """The table's entry for this figure on this CPU model; None for a GPU figure or a CPU the table lacks."""
    if m.device != "cpu" or m.unit != "GFLOP/s":
        return None
    model = model_of(cpu_name, cpu=True)
    if model is None:
        return None
    return next((r for r in references_of(model.key) if r.figure == m.name and r.peak), None)
