"""A baseline file (`run --baseline FILE`), read and checked before a run: each "device model/figure" key's
value from a known-good machine or fleet, as `rigcheck export RUN --format baseline` writes it.

Standard library only: the run options read it; the figures then travel to the parent's judgement and to the
matmul child (engine/measure/references.py looks them up).

A baseline takes the reference table's place, so it is held to the table's rules: where the table knows the
figure for that device's model, the baseline's unit must be the table's, and its value must lie where a table
entry may (20-100% of the model's datasheet peak, or within 5x either way of the table's figure where there is
no peak). A baseline of 0.001 once turned a figure at a quarter of the table's into a PASS.
"""

from __future__ import annotations

import json
import math
from typing import Any

BASELINE_FORMAT = "rigcheck-baseline"
BASELINE_VERSION = 1
BASELINE_MAX_FIGURES = 1000
BASELINE_MAX_BYTES = 100_000  # it travels to each stage child on its command line


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


NO_PEAK_SPREAD = 5.0  # without a datasheet peak: how far either way of the table's own figure a baseline may lie


def range_problem(key: str, value: float, unit: str) -> str | None:
    """What the table's rules say against one baseline figure (its unit, its range), or None."""
    # imported here: the options parser imports this module, and the health gate must never load the table (issue 44)
    from rigcheck.engine.measure.references import SHARE_RANGE, table_reference

    model, _, name = key.partition("/")
    reference = table_reference(model, name)
    if reference is None:
        return None  # a model or figure the table does not know: nothing to hold it to
    if unit != reference.unit:
        return f"figure {key!r} is in {unit or 'no unit'!r}; the table gives this figure in {reference.unit!r}"
    if reference.peak:
        share, (low, high) = value / reference.peak, SHARE_RANGE
        if not low <= share <= high:
            return (
                f"figure {key!r}: {value:,.4g} {unit} is {share:.3g}x of the {reference.model}'s datasheet peak "
                f"{reference.peak:,.4g}; a reference must lie within {low:.0%}-{high:.0%} of it (a unit slip?)"
            )
        return None
    ratio = value / reference.value
    if not 1 / NO_PEAK_SPREAD <= ratio <= NO_PEAK_SPREAD:
        return (
            f"figure {key!r}: {value:,.4g} {unit} is {ratio:.3g}x the table's {reference.value:,.4g} for the "
            f"{reference.model}; a baseline must lie within {NO_PEAK_SPREAD:g}x of it either way"
        )
    return None


def parse_baseline(text: str) -> dict[str, Any]:
    """A baseline file's figures, checked; ValueError with one sentence on what is wrong."""
    try:
        data = json.loads(text)
    except ValueError as error:
        raise ValueError(f"not JSON ({error})") from None
    if not isinstance(data, dict) or data.get("format") != BASELINE_FORMAT:
        raise ValueError(
            f'not a rigcheck baseline (no "format": "{BASELINE_FORMAT}"); make one with '
            "`rigcheck export RUN --format baseline`"
        )
    if data.get("version") != BASELINE_VERSION:
        raise ValueError(f"baseline version {data.get('version')!r}: this rigcheck reads version {BASELINE_VERSION}")
    figures = data.get("figures")
    if not isinstance(figures, dict) or not figures:
        raise ValueError('it has no "figures"')
    if len(figures) > BASELINE_MAX_FIGURES:
        raise ValueError(
            f"{len(figures)} figures, more than {BASELINE_MAX_FIGURES}: keep the models and figures to judge"
        )
    clean: dict[str, dict[str, Any]] = {}
    for key, entry in figures.items():
        model, slash, name = str(key).partition("/")
        value = _number(entry.get("value")) if isinstance(entry, dict) else None
        if not (slash and model.strip() and name.strip()) or value is None:
            raise ValueError(f'figure {key!r}: want "DEVICE MODEL/figure name": {{"value": a positive number, ...}}')
        unit = str(entry.get("unit", ""))[:20]
        problem = range_problem(str(key), value, unit)
        if problem:
            raise ValueError(problem)
        clean[key] = {
            "value": value,
            "unit": unit,
            "source": str(entry.get("source", ""))[:200],
        }
    baseline = {"source": str(data.get("source", ""))[:300], "figures": clean}
    if len(json.dumps(baseline)) > BASELINE_MAX_BYTES:
        raise ValueError(f"over {BASELINE_MAX_BYTES // 1000} kB of figures: keep the models and figures to judge")
    return baseline
