"""A figure's spread is the interquartile range of its rates, shown as a share of the figure, and a
figure too noisy to mean much is never picked as the matmul stage's best."""

from __future__ import annotations

import pytest
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.measure.stats import TimingStats
from rigcheck.engine.report.compare import Side
from rigcheck.engine.report.rows import UNSTABLE_WORTH, detail_text, meaning, signed_spread, spread_text
from rigcheck.engine.stages.matmul.stage import summary_verdicts


def test_one_preempted_call_cannot_make_a_rate_spread_beyond_the_figure() -> None:
    """Seen on a busy 2-CPU VM: `matmul fp32 256 123.1 GFLOP/s ±6.29e+03`, over the figure's own limit."""
    times = (0.001, 0.001, 0.001, 0.0011, 0.9, 1.2)  # two calls preempted for most of a second
    stats = TimingStats(times)
    median, _, spread = stats.rate(1.0)
    assert 0 < spread < median  # over the times this was 85x the figure
    assert stats.spread == pytest.approx(spread / median)
    assert stats.noisy


def test_steady_rates_spread_as_the_times_do() -> None:
    stats = TimingStats((1.00, 1.01, 0.99, 1.00, 1.02, 1.00, 0.99, 1.01))
    assert stats.spread == pytest.approx(0.015, abs=0.005) and not stats.noisy


def test_spread_is_shown_as_a_share_of_the_figure() -> None:
    assert spread_text(123.1, 6.2) == "5.0%"
    assert spread_text(790.0, 3.2) == "0.4%"
    assert spread_text(100.0, 25.0) == "25%"
    assert spread_text(100.0, None) == "" and spread_text(0.0, 1.0) == ""
    assert Side(776.1, "TFLOP/s", 3.1, "TRUSTED").text() == "776.1 TFLOP/s ±0.4% TRUSTED"
    row = {"kind": "measurement", "name": "x", "value": 50.0, "unit": "GB/s", "spread": 1.0, "device": "cpu"}
    assert "x: 50 GB/s (spread of the rate ±2.0% of the median)" in detail_text(row)


def test_a_spread_of_half_the_figure_or_more_is_unstable_never_a_plus_minus() -> None:
    """Seen: `±672%`, `±7,148%`, `±10,657%`, which read as a bug and imply negative rates."""
    assert signed_spread(100.0, 49.0) == "±49%"  # just under the line: still a share
    assert signed_spread(100.0, 50.0) == "unstable (spread 50% of the figure)"  # on it: unstable
    assert signed_spread(100.0, 7148.0) == "unstable (spread 71x the figure)"
    assert signed_spread(-100.0, 7148.0) == "unstable (spread 71x the figure)"
    assert spread_text(100.0, 10657.0) == "unstable (spread 107x the figure)"
    assert "±" not in Side(10.0, "GFLOP/s", 715.0, "NOISY").text()
    row = {"kind": "measurement", "name": "x", "value": 10.0, "unit": "GFLOP/s", "spread": 715.0, "device": "cpu"}
    assert "±" not in detail_text(row) and UNSTABLE_WORTH in detail_text(row)
    assert meaning(row) == "unstable: a rough indication only"  # the app's why column and the CLI's trust cell
    assert meaning(row | {"spread": 4.9}) == ""  # just under half the figure: a spread like any other


def sweep(value: float, size: int, spread_rel: float, dtype: str = "bf16") -> Measurement:
    params = {"dtype": dtype, "library": "torch", "m": size, "share_of_peak": None, "peak": None}
    params |= {"noisy": spread_rel > 0.05, "spread_rel": spread_rel, "launch_bound": False, "broken": None}
    return Measurement("matmul", f"matmul {dtype} {size}", value, "GFLOP/s", value * spread_rel, 9, "cpu", params)


def test_the_best_is_never_a_figure_noisy_beyond_use() -> None:
    figures = [sweep(300.0, 256, 11.0), sweep(120.0, 1024, 0.02)]  # the fastest spread 11 times its value
    verdicts = {v.check: v for v in summary_verdicts(figures, "cpu")}
    assert verdicts["best-bf16"].status == Status.NOT_JUDGED  # a CPU has no reference figure: never a PASS
    assert verdicts["best-bf16"].explanation.startswith("best bf16 on cpu: 120 GFLOP/s median at 1024")


def test_with_only_noisy_figures_there_is_no_best_and_it_says_why() -> None:
    verdicts = {v.check: v for v in summary_verdicts([sweep(300.0, 256, 11.0), sweep(80.0, 512, 0.4)], "cpu")}
    best = verdicts["best-bf16"]
    assert best.status == Status.INCONCLUSIVE
    assert best.explanation.startswith("no best bf16 on cpu: could not be judged: every figure spread")
    assert "matmul bf16 256 ±1100%" in best.explanation and "--wait-quiet" in best.explanation
