"""Leave-one-out over the reference table: every model's own entries predicted from its siblings (its own removed)
fall within their declared spread; a wrong share planted in a sibling is caught, at the spread's edge on each side;
bench/RESULTS.md holds the table as the script writes it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from rigcheck.engine.measure.leave_one_out import Prediction, predictions, table
from rigcheck.engine.measure.references import REFERENCES

RESULTS = Path(__file__).resolve().parents[2] / "bench" / "RESULTS.md"


def test_every_prediction_is_within_its_declared_spread() -> None:
    rows = predictions()
    made = [p for p in rows if p.predicted is not None]
    assert len(made) >= 20
    assert [(p.model, p.figure, round(p.ratio or 0, 3)) for p in made if p.miss] == []
    assert {p.model for p in made} >= {"H200", "H100 SXM", "GH200", "A100 SXM", "A100 PCIe", "B200", "MI300X"}
    # an entry no sibling can predict says why, never a guess
    assert all(p.basis for p in rows if p.predicted is None)


def _planted(factor: float) -> Prediction:
    """The H100 SXM's MAMF predicted from the H200 and GH200 after the H200's entry is scaled by `factor`."""
    planted = tuple(
        replace(r, value=r.value * factor) if (r.model, r.figure) == ("H200", "best-bf16") else r for r in REFERENCES
    )
    no_gh200 = tuple(r for r in planted if r.model != "GH200")
    return next(p for p in predictions(no_gh200) if (p.model, p.figure) == ("H100 SXM", "best-bf16"))


@pytest.mark.parametrize(("factor", "miss"), [(1.0, False), (1.17, False), (1.19, True), (0.86, False), (0.84, True)])
def test_a_wrong_share_in_a_sibling_is_a_miss_at_the_spread_s_edge(factor: float, miss: bool) -> None:
    found = _planted(factor)
    assert found.spread == 0.15 and found.ratio == pytest.approx(1 / factor, rel=1e-6)
    assert found.miss is miss  # 1/1.19 < 0.85: a healthy H100 would be a WARN; 1/0.84 > 1/0.85: a slow one would pass


def test_results_md_holds_the_table_the_script_writes() -> None:
    text = RESULTS.read_text(encoding="utf-8")
    assert table(predictions()) in text, "run: python3 bench/leave_one_out.py"
