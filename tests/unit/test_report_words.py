"""The exports a person reads (issue 34): Markdown as a ticket document, the HTML's headline, code and stage names
that never print over each other, and the CPU burn in the words and units of the rest of rigcheck."""

from __future__ import annotations

import sys
from pathlib import Path

from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.report.export import render
from rigcheck.engine.report.html_plots import label_rows
from rigcheck.engine.report.html_report import to_html
from rigcheck.engine.report.html_tables import words
from rigcheck.engine.report.html_timeline import Span
from rigcheck.engine.store import Store


def stored(tmp_path: Path) -> dict:  # type: ignore[type-arg]
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["matmul", "bandwidth"], "cpu", "quick", sys.executable, [])
    store.record(run_id, Verdict("matmul", "best-fp32", Status.FAIL, "slow; next: rerun with `--wait-quiet 120`"))
    store.record(run_id, Verdict("bandwidth", "quiet-check", Status.WARN, "host busy | really"))
    conditions = {
        "trust": "SUSPECT",
        "trust_reasons": ["other processes kept 1.4 of 2 CPUs busy; next: stop them, or rerun with `--wait-quiet`"],
        "host_others_cpus": 1.3712345,
        "host_cpus": 2,
        "verified": False,
    }
    params = {"m": 512, "dtype": "fp32", "timer": "perf_counter"}
    figure = Measurement(
        "matmul", "matmul fp32 512", 28.093907075294837, "GFLOP/s", 2008.0, 9, "cpu", params, conditions
    )
    store.record(run_id, figure)
    steady = Measurement("bandwidth", "host memory copy", 24.27, "GB/s", 1.9, 18, "cpu", {}, {"trust": "TRUSTED"})
    store.record(run_id, steady)
    store.end_run(run_id, "complete", 1)
    report = store.report(run_id)
    assert report is not None
    return report


def test_markdown_is_a_ticket_document_with_no_json_and_rounded_values(tmp_path: Path) -> None:
    """Seen: no trust reasons, no spread, a raw JSON detail column, `28.093907075294837`."""
    text = render(stored(tmp_path), "md")
    assert "28.093907075294837" not in text and "| 28.09 GFLOP/s |" in text
    assert '{"' not in text and '"dtype"' not in text  # no JSON blob
    assert "- verdicts and figures: 1 FAIL, 1 WARN; 1 SUSPECT figure" in text
    assert "other processes kept 1.4 of 2 CPUs busy" in text  # the trust reason
    assert "unstable (spread 71x the figure)" in text and "rough indication" in text  # the spread, in words
    assert "| ±7.8% |" in text  # a steady spread as a share
    assert "CPUs busy with other processes 1.371, CPUs 2" in text  # conditions in words
    assert "host busy \\| really" in text  # a pipe cannot break the table
    assert "| **FAIL** |" in text


def test_html_leads_with_its_counts_and_shows_commands_as_code(tmp_path: Path) -> None:
    page = to_html(stored(tmp_path), [])
    head = page[page.index("<h1>") : page.index("<nav>")]
    assert "st-fail" in head and "FAIL</span> 1" in head and "SUSPECT</span> 1" in head
    assert "`" not in page[page.index('<section id="verdicts">') :]  # no backtick shown as a backtick
    assert "<code>--wait-quiet 120</code>" in page
    assert words("a <b> `x`") == "a &lt;b&gt; <code>x</code>"


def test_stage_names_side_by_side_go_in_rows_and_never_overlap() -> None:
    """Seen: short stages' names printed over each other along the timeline's top."""
    spans = [Span("probe", 0.0, 0.8), Span("health", 0.8, 1.0), Span("verify", 1.0, 2.0), Span("training", 2, 300)]
    rows = label_rows(spans)
    assert rows[0] != rows[1] and rows[1] != rows[2]  # three short stages at the start, stacked
    assert rows[3] == 0  # a long stage's name sits in the lowest row
    assert label_rows([Span("probe", 0, 100), Span("verify", 100, 200)]) == [0, 0]  # room for both


def test_the_cpu_burn_speaks_fp32_and_gflops_with_one_label_per_interval() -> None:
    """Seen: each `at N s` label twice with different values, in TFLOP/s, and `float32`."""
    import torch
    from rigcheck.engine.stages.burn.loop import BurnSettings, Interval
    from rigcheck.engine.stages.burn.stage import interval_measurement, sustained

    settings = BurnSettings(30.0, 1.5, 256, torch.float32, check_every=1)
    ends = (1.51, 2.49, 4.51, 5.49)  # whole seconds made "at 2 s", "at 2 s", "at 5 s", "at 5 s"
    items = [Interval("cpu", i, 1000.0 + end - 1.0, 1000.0 + end, 10, 1.0, 1.0, 0.0123) for i, end in enumerate(ends)]
    figures = [interval_measurement(item, settings, 1000.0) for item in items]
    assert len({m.name for m in figures}) == 4
    assert figures[0].name == "burn fp32 256 at 1.5 s" and figures[0].unit == "GFLOP/s"
    assert figures[0].value == 12.3
    whole = sustained("cpu", items, settings)
    assert whole.name == "burn fp32 256 sustained" and whole.unit == "GFLOP/s" and whole.value == 12.3
    gpu = Interval("cuda:0", 0, 0.0, 15.0, 10, 1.0, 1.0, 644.0)
    on_gpu = interval_measurement(gpu, BurnSettings(300.0, 15.0, 8192, torch.bfloat16, check_every=8), 0.0)
    assert on_gpu.name == "burn bf16 8192 at 15 s" and on_gpu.unit == "TFLOP/s" and on_gpu.value == 644.0


def test_the_cpu_burn_over_time_verdict_speaks_gflops() -> None:
    from rigcheck.engine.stages.burn.loop import Interval
    from rigcheck.engine.stages.burn.verdicts import over_time

    items = [Interval("cpu", i, float(i), float(i + 1), 10, 1.0, 1.0, 0.05) for i in range(40)]
    verdict = over_time("cpu", items, lambda device, t0, t1: {})
    assert "GFLOP/s" in verdict.explanation and "TFLOP/s" not in verdict.explanation and "50" in verdict.explanation
