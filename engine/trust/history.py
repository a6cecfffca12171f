"""A figure against the same GPU's (by UUID) or the same host CPU's own earlier clean runs: a drift of more than
10% from that median is a WARN naming the runs it was compared with (INCONCLUSIVE where the figure's one cause
is someone else's load or a setting in force: engine/trust/expect_words.py).

Standard library only. The store's reader (engine/store/history.py) supplies the earlier figures; this module
only judges them, so it is tested with plain lists.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from statistics import median

from rigcheck.engine.events import Measurement, Status, Trust, Verdict
from rigcheck.engine.trust.cause import Expectation
from rigcheck.engine.trust.expect_words import joined, judge
from rigcheck.engine.trust.judgement import trust_in

DRIFT = 0.10  # more than 10% from its own clean median is named
MIN_EARLIER = 3  # a median of fewer is no history: one lease's tf32 or small-batch figure moves 10-17% from another's
MAD_SCALE, MAD_FLOOR = 1.4826, 3.0  # and a drift must also clear 3 scaled MADs of them: its own runs' scatter
# Below this batch a GPU training step waits on the host's Python and kernel launches (trust/expect_training.py's
# MIN_BATCH): such a figure, like any CPU figure, moves with the host from run to run (20-40% on a quiet H100 host,
# 2026-12-07), so its history names it only past the band its expectation declares for that scatter.
HOST_BOUND_BATCH = 4096


@dataclass(frozen=True)
class Past:
    """One earlier clean figure: the run it came from, its value and unit."""

    run_id: int
    value: float
    unit: str


History = Callable[[Measurement], list[Past]]  # the earlier clean figures of this one, newest first


def identity(m: Measurement) -> str | None:
    """What a figure's history follows: its GPU's UUID, or 'cpu' for the host's CPU; None where unknown."""
    if m.device.startswith("cuda"):
        uuid = m.params.get("gpu_uuid")
        return str(uuid) if uuid else None
    return "cpu" if m.device == "cpu" else None


def whole(m: Measurement) -> bool:
    """Not broken, not launch-bound, and not a pageable host copy (those measure the host's page cache and
    staging buffers: 8-18 GB/s on one H200 host)."""
    p = m.params
    pageable = p.get("bound") == "link" and not p.get("pinned")
    return not p.get("broken") and not p.get("launch_bound") and not pageable


def clean(m: Measurement) -> bool:
    """Trusted and whole: the figures a history is made of."""
    return trust_in(m.conditions) is Trust.TRUSTED and whole(m)


def judgeable(m: Measurement) -> bool:
    """The figures judged against a history: clean ones, and SUSPECT whole ones, which only ever give an
    INCONCLUSIVE (where they drift and their one cause is someone else's load)."""
    return trust_in(m.conditions) in (Trust.TRUSTED, Trust.SUSPECT) and whole(m)


def host_bound(m: Measurement) -> bool:
    """A figure the host sets: any CPU figure, and a GPU training step too small to keep the GPU busy."""
    if m.params.get("bound") == "host" or m.device == "cpu":
        return True
    batch = m.params.get("batch")
    return m.stage == "training" and isinstance(batch, int) and batch < HOST_BOUND_BATCH


def history_verdict(m: Measurement, earlier: list[Past], stage: str, band: float = 0.0) -> Verdict | None:
    """WARN where the figure drifted more than DRIFT from its own clean median (a host-bound figure: only below it,
    by more than `band`, the run-to-run spread its expectation declares, where that is wider); INCONCLUSIVE where
    its cause is unjudgeable; None where it did not, or where there is nothing (in its unit) to compare with."""
    past = [p for p in earlier if p.unit == m.unit and p.value > 0]
    if len(past) < MIN_EARLIER or not judgeable(m) or m.value <= 0:
        return None
    middle = median(p.value for p in past)
    drift = m.value / middle - 1.0
    mad = median(abs(p.value - middle) for p in past)
    hosted = host_bound(m)
    tolerance = max(DRIFT, band) if hosted else DRIFT
    if drift > 0 and hosted:
        return None  # the host held its earlier runs down (its load only lowers a figure); a quicker one is no fault
    if abs(drift) <= tolerance or abs(m.value - middle) <= MAD_FLOOR * MAD_SCALE * mad:
        return None  # within 10%, or within what this figure's own clean runs scatter by
    runs = sorted({p.run_id for p in past}, reverse=True)
    named = ", ".join(str(r) for r in runs[:5]) + (f" and {len(runs) - 5} more" if len(runs) > 5 else "")
    way = "below" if drift < 0 else "above"
    text = (
        f"{m.device} {m.name} {m.value:,.4g} {m.unit}: {abs(drift):.0%} {way} its own clean median {middle:,.4g} "
        f"(compared with run {runs[0]}, the latest of {len(past)} earlier clean figure(s): run(s) {named})"
    )
    numbers = {"device": m.device, "value": m.value, "median": middle, "drift": round(drift, 4), "runs": runs[:20]}
    source = f"its own clean median over {len(past)} earlier run(s), latest run {runs[0]}"
    found = judge(m, Status.WARN, Expectation(middle, source, "history"))
    if not clean(m) and found.status != Status.INCONCLUSIVE:
        return None  # a SUSPECT figure is no evidence against its history, only unable to be judged by it
    if drift < 0 or found.status == Status.INCONCLUSIVE:
        text, numbers = joined(text, found), numbers | found.numbers
    return Verdict(stage, f"history {m.name}", found.status, text, numbers, tolerance, m.device)


def history_verdicts(
    figures: Iterable[Measurement],
    stage: str,
    history: History | None,
    band: Callable[[Measurement], float] | None = None,
) -> Iterator[Verdict]:
    """A WARN for each figure that drifted from its own history; nothing where there is no history.
    `band`: the run-to-run spread a figure's expectation declares (1 - its entry's warn_below), 0 where none."""
    if history is None:
        return
    for m in figures:
        if identity(m) is None:
            continue
        declared = band(m) if band is not None and host_bound(m) else 0.0  # only a host-bound figure uses it
        verdict = history_verdict(m, history(m), stage, declared)
        if verdict is not None:
            yield verdict
