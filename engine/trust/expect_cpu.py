"""A CPU matmul or training figure against cores x clock x FLOP/cycle (the limit its stage computed) times the share
of that limit the same CPU model reached when rigcheck measured it (engine/measure/references.json, kinds
"cpu matmul" and "cpu training"; a training figure's limit is that compute limit over the board network's FLOPs
per sample).

A CPU figure is never failed by it, only named (a WARN): a host's CPUs are shared with everything else it runs;
INCONCLUSIVE where its one cause is someone else's load or a setting in force (engine/trust/expect_words.py).
Standard library only: the parent runs it.
"""

from __future__ import annotations

from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.facts.cpu_reference import cpu_model, cpu_reference, this_cpu
from rigcheck.engine.measure.references import share_of_peak
from rigcheck.engine.trust.cause import Expectation
from rigcheck.engine.trust.expect_words import joined, judge

__all__ = ["cpu_reference", "cpu_verdict", "this_cpu"]


def cpu_verdict(m: Measurement, stage: str, cpu_name: str) -> Verdict | None:
    """PASS or WARN for a CPU matmul or training figure with a limit and a reference; None otherwise."""
    reference = cpu_reference(m, cpu_name)
    limit = m.params.get("limit")
    if reference is None or not limit or m.params.get("broken") or m.value <= 0:
        return None
    achievable = share_of_peak(reference)
    expected = achievable * float(limit)
    ratio = m.value / expected
    basis = m.params.get("limit_basis") or "its limit"
    model = cpu_model(cpu_name)
    capability = f" ({model.capability})" if model is not None and model.capability else ""
    head = (
        f"cpu {m.name} {m.value:,.4g} {m.unit}: {m.value / float(limit):.0%} of {basis}"
        f" ({float(limit):,.4g}), against the {achievable:.0%} the {reference.model}{capability} reaches "
        f"({reference.short}): {ratio:.2f}x of the {expected:,.4g} expected"
    )
    numbers = {"device": "cpu", "value": m.value, "expected": round(expected, 2), "ratio": round(ratio, 4)}
    numbers |= {"share_of_limit": round(m.value / float(limit), 4), "achievable": round(achievable, 4)}
    numbers |= {"model": reference.model, "source": reference.source, "capability": capability.strip(" ()")}
    numbers |= {"basis": f"{achievable:.0%} of its limit, as a {reference.model}{capability} reaches"}
    graded = Status.PASS if ratio >= reference.warn_below else Status.WARN
    threads = m.params.get("threads")
    if graded == Status.WARN and threads:
        head += f" with {threads} thread(s)"
    found = judge(m, graded, Expectation(expected, f"{achievable:.0%} of {basis} ({reference.short})", "cpu"))
    text, numbers = joined(head, found), numbers | found.numbers
    return Verdict(stage, f"cpu {m.name}", found.status, text, numbers, 1 - reference.warn_below, "cpu")
