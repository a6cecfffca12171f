"""Two runs compared figure by figure: a ratio only where both figures are TRUSTED, with the spread and trust shown."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from cli_calls import rigcheck
from rigcheck.engine.events import Measurement
from rigcheck.engine.report.compare import compare
from rigcheck.engine.store import Store


def figure(name: str, value: float, trust: str | None, spread: float | None = 1.0, unit: str = "TFLOP/s") -> dict:
    conditions: dict[str, Any] = {} if trust is None else {"trust": trust, "verified": True}
    if trust == "SUSPECT":
        conditions["trust_reasons"] = ["SM clock at 73% of max: power cap"]
    return {"name": name, "device": "cuda:0", "value": value, "unit": unit, "spread": spread, "conditions": conditions}


def report(run_id: int, *figures: dict) -> dict:
    return {"run": {"id": run_id}, "measurements": list(figures)}


def test_both_trusted_gives_a_ratio_and_says_when_it_is_within_the_spread() -> None:
    rows = compare(
        report(1, figure("bf16", 700.0, "TRUSTED", 5.0), figure("fp32", 50.0, "TRUSTED", 0.1)),
        report(2, figure("bf16", 770.0, "TRUSTED", 5.0), figure("fp32", 50.1, "TRUSTED", 0.1)),
    )
    by_name = {row.figure: row for row in rows}
    assert by_name["bf16 [cuda:0]"].ratio == 1.1 and by_name["bf16 [cuda:0]"].ratio_text() == "1.100"
    assert by_name["fp32 [cuda:0]"].ratio_text() == "1.002 (within the spread)"
    assert by_name["bf16 [cuda:0]"].first.text() == "700 TFLOP/s ±0.7% TRUSTED"  # spread as a share


def test_a_suspect_or_unlabelled_side_gets_no_ratio_and_says_why() -> None:
    rows = compare(
        report(3, figure("bf16", 700.0, "TRUSTED"), figure("fp32", 50.0, None)),
        report(4, figure("bf16", 500.0, "SUSPECT"), figure("fp32", 50.0, "TRUSTED")),
    )
    by_name = {row.figure: row for row in rows}
    assert by_name["bf16 [cuda:0]"].ratio is None
    assert by_name["bf16 [cuda:0]"].ratio_text() == "no ratio: run 4 SUSPECT"
    assert by_name["fp32 [cuda:0]"].ratio_text() == "no ratio: run 3 no telemetry"


def test_figures_in_one_run_only_or_in_other_units_are_listed_without_ratio() -> None:
    rows = compare(
        report(1, figure("old", 1.0, "TRUSTED"), figure("bw", 4.0, "TRUSTED", unit="TB/s")),
        report(2, figure("new", 2.0, "TRUSTED"), figure("bw", 4000.0, "TRUSTED", unit="GB/s")),
    )
    assert [(r.figure, r.ratio_text()) for r in rows] == [
        ("bw [cuda:0]", "units differ (TB/s / GB/s)"),
        ("new [cuda:0]", "only in run 2"),
        ("old [cuda:0]", "only in run 1"),
    ]


def test_the_compare_command_prints_trust_spread_and_ratio(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    for value, trust in ((100.0, "TRUSTED"), (120.0, "TRUSTED"), (60.0, "SUSPECT")):
        run_id = store.begin_run(["matmul"], "cpu", "quick", sys.executable, [])
        conditions = {"trust": trust, "trust_reasons": ["busy host"] if trust == "SUSPECT" else []}
        store.record(run_id, Measurement("matmul", "fp32 4096", value, "GFLOP/s", 2.0, 5, "cpu", conditions=conditions))
        store.end_run(run_id, "complete", 0)
    trusted = rigcheck("compare", "1", "2", store=tmp_path / "s.db")
    assert trusted.returncode == 0, trusted.stderr
    line = next(line for line in trusted.stdout.splitlines() if "fp32 4096" in line)
    assert "100 GFLOP/s ±2.0% TRUSTED" in line and "120 GFLOP/s ±1.7% TRUSTED" in line and "1.200" in line
    suspect = rigcheck("compare", "2", "last", store=tmp_path / "s.db")
    line = next(line for line in suspect.stdout.splitlines() if "fp32 4096" in line)
    assert "60 GFLOP/s ±3.3% SUSPECT" in line and "no ratio: run 3 SUSPECT" in line and "0.5" not in line
