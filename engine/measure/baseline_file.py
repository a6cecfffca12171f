"""A baseline file (`run --baseline FILE`), read and checked before a run: each "device model/figure" key's
value from a known-good machine or fleet, as `rigcheck export RUN --format baseline` writes it.

Standard library only: the run options read it; the figures then travel to the parent's judgement and to the
matmul child (engine/measure/references.py looks them up).
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
        clean[key] = {
            "value": value,
            "unit": str(entry.get("unit", ""))[:20],
            "source": str(entry.get("source", ""))[:200],
        }
    baseline = {"source": str(data.get("source", ""))[:300], "figures": clean}
    if len(json.dumps(baseline)) > BASELINE_MAX_BYTES:
        raise ValueError(f"over {BASELINE_MAX_BYTES // 1000} kB of figures: keep the models and figures to judge")
    return baseline
