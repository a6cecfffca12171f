"""Issue 34, item 7: why a figure is SUSPECT is read in full where the figure is, at 80x24; Results' detail is
words, not JSON; Compare fits 80 columns; toasts leave the tables and the why line alone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from pilot_helpers import wait_until
from rigcheck.engine.events import Measurement, StageStarted, Status, Verdict
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.widgets.row_words import detail_words, reason_sentences, why_text
from screen_text import screen_text
from stored_runs import two_gpu_run

SIZES = [(80, 24), (120, 40)]
LONG_REASON = (
    "other processes kept 1.3 of 2 CPUs busy while this figure needed 2: yes (pid 4242, 1.0 CPUs), python "
    "(pid 977, 0.2 CPUs), the rest 0.1 CPUs; next: stop them, or rerun with `--wait-quiet`"
)


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


def words(text: str) -> str:
    """The screen's words in one line: what wraps over several lines reads as one sentence."""
    return " ".join(text.split())


def figure(name: str, trust: str = "TRUSTED", reasons: list[str] | None = None) -> Measurement:
    conditions = {"trust": trust, "trust_reasons": reasons or [], "verified": True}
    return Measurement("matmul", name, 163.6, "GFLOP/s", 3.0, 5, "cpu", {}, conditions)


def region_lines(app: RigcheckApp, selector: str) -> list[str]:
    region = app.screen.query_one(selector).region
    lines = screen_text(app).splitlines()
    return [line[region.x : region.right] for line in lines[region.y : region.bottom]]


@pytest.mark.parametrize("size", SIZES)
async def test_the_running_tab_says_why_the_highlighted_figure_is_suspect_in_full(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=size) as pilot:
        app.show(StageStarted("matmul", "cpu", 1, "python"))
        app.show(figure("cpu fp32 256"))
        app.show(figure("cpu fp32 512", "SUSPECT", [LONG_REASON]))
        app.show(figure("cpu fp32 1024"))
        await pilot.pause(0.8)  # the held figures join the table
        await pilot.press("n")  # the Running tab, its table focused
        await pilot.pause(0.1)
        assert app.focused is app.query_one("#bench")
        await pilot.press("up")
        await pilot.pause(0.2)
        shown = words("\n".join(region_lines(app, "#bench-why")))
        assert "cpu fp32 512 on cpu is SUSPECT:" in shown
        assert words(reason_sentences(LONG_REASON)) in shown  # every word of it, on the Running tab
        assert "Next: stop them, or rerun with `--wait-quiet`." in shown
        assert "{" not in shown


async def test_a_cursor_moved_up_to_read_a_reason_stays_there_as_figures_arrive(tmp_path: Path) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=(80, 24)) as pilot:
        app.show(figure("first", "SUSPECT", [LONG_REASON]))
        app.show(figure("second"))
        await pilot.pause(0.8)
        await pilot.press("n", "up")
        await pilot.pause(0.1)
        bench = app.query_one("#bench")
        assert bench.cursor_row == 0
        app.show(figure("third"))
        await pilot.pause(0.8)
        assert bench.row_count == 3 and bench.cursor_row == 0  # still on the figure being read
        assert "first on cpu is SUSPECT" in words("\n".join(region_lines(app, "#bench-why")))
        await pilot.press("down", "down")
        app.show(figure("fourth"))
        await pilot.pause(0.8)
        assert bench.cursor_row == 3  # on the last row it follows the newest again


def test_why_text_is_sentences_for_every_trust() -> None:
    row = {"kind": "measurement", "name": "x", "device": "cpu", "value": 1.0, "unit": "u"}
    suspect = why_text(row | {"conditions": {"trust": "SUSPECT", "trust_reasons": ["a; next: b", "c"]}})
    assert suspect == "x on cpu is SUSPECT because: A. Next: b. C."
    assert why_text(row | {"conditions": {"trust": "TRUSTED"}}).startswith("x on cpu is TRUSTED: measured on a quiet")
    assert "no telemetry was recorded" in why_text(row | {"conditions": {}})
    unverified = why_text(row | {"conditions": {"trust": "TRUSTED", "verified": False}})
    assert unverified.endswith("so it is unverified.")


async def test_results_detail_is_words_and_fields_never_json(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["matmul"], "cpu", "quick", "python", [])
    numbers = {"best_rate": 163.61234, "sizes": [256, 512], "per_size": {"n256": 12.5}}
    store.record(run_id, Verdict("matmul", "best-fp32", Status.WARN, "below its reference", numbers))
    params = {"threads": 2, "dtype": "float32"}
    store.record(run_id, Measurement("matmul", "cpu fp32 512", 163.6, "GFLOP/s", 3.0, 5, "cpu", params, {}))
    store.end_run(run_id, "complete", 0)
    app = RigcheckApp(store, FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=(80, 24)) as pilot:
        app.show_run(run_id)
        await pilot.pause(0.2)
        verdict = words("\n".join(region_lines(app, "#result-detail")))
        assert "WARN matmul/best-fp32: Below its reference." in verdict
        assert "best rate: 163.6" in verdict and "sizes: 256, 512" in verdict and "per size: n256 12.5" in verdict
        await pilot.press("down")
        await pilot.pause(0.2)
        measured = words("\n".join(region_lines(app, "#result-detail")))
        assert "cpu fp32 512 on cpu: no telemetry was recorded beside it" in measured
        await pilot.press("enter")
        await pilot.pause(0.2)
        full = words("\n".join(region_lines(app, "#detail-text")))
        assert "Parameters: dtype: float32; threads: 2." in full and "Value: 163.6 GFLOP/s over 5 repeats" in full
    for text in (verdict, measured, full):
        assert not re.search(r"[{}\"]", text), text  # no JSON braces or quoted keys anywhere


def test_detail_words_put_the_why_first() -> None:
    row = {
        "kind": "measurement",
        "name": "x",
        "device": "cuda:0",
        "value": 2.0,
        "unit": "u",
        "spread": 0.1,
        "repeats": 3,
        "params": {},
        "conditions": {"trust": "SUSPECT", "trust_reasons": ["hot"], "notes": ["power-limited"], "verified": True},
    }
    lines = detail_words(row).splitlines()
    assert lines[0] == "x on cuda:0 is SUSPECT: Hot."
    assert lines[1] == "Value: 2 u over 3 repeats, its rate spread ±5.0% of the median."
    assert "Verified: yes." in lines and "Note: Power-limited." in lines


def test_detail_words_say_an_unstable_rate_without_a_plus_minus() -> None:
    """An unstable spread reads "its rate unstable (spread 2x the figure)", never "spread ±unstable (...)"."""
    row = {"kind": "measurement", "name": "x", "device": "cpu", "value": 2.0, "unit": "u", "spread": 4.6, "repeats": 22}
    row |= {"params": {}, "conditions": {"trust": "NOISY", "verified": True}}
    value_line = detail_words(row).splitlines()[1]
    assert value_line == "Value: 2 u over 22 repeats, its rate unstable (spread 2x the figure)."
    steady = detail_words(row | {"spread": 0.1}).splitlines()[1]
    assert steady == "Value: 2 u over 22 repeats, its rate spread ±5.0% of the median."


@pytest.mark.parametrize("size", SIZES)
async def test_compare_shows_both_runs_and_the_ratio_without_scrolling(tmp_path: Path, size: tuple[int, int]) -> None:
    store = Store(tmp_path / "s.db")
    two_gpu_run(store)
    two_gpu_run(store)
    app = RigcheckApp(store, FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=size) as pilot:
        await pilot.press("h")
        await pilot.pause(0.2)
        await pilot.press("space", "down", "space", "c")
        await pilot.pause(0.3)
        table = app.screen.query_one("#compare-table")
        assert table.virtual_size.width <= table.scrollable_content_region.width  # nothing to scroll to
        lines = screen_text(app).splitlines()
        header = next(line for line in lines if " figure " in line)
        for word in ("device", "run 1", "run 2", "unit", "ratio"):
            assert word in header, (word, header)
        rows = [line for line in lines if "matmul fp32 4096" in line and "GFLOP/s" in line]
        assert any("cuda:0" in r and "51.18 TRUSTED" in r and "1.000" in r for r in rows), rows
        assert any("cuda:1" in r and "131.9 SUSPECT" in r for r in rows), rows  # devices told apart
        for _ in range(table.row_count):
            if "cuda:1" in str(table.get_row_at(table.cursor_row)[1]):
                break
            await pilot.press("down")
        await pilot.pause(0.2)
        said = words("\n".join(region_lines(app, "#compare-why")))
        assert "run 1 131.9 GFLOP/s ±0.2% SUSPECT (SM clock at 73% of max: power cap)" in said
        assert "no ratio: run 1 SUSPECT, run 2 SUSPECT" in said


async def test_a_toast_at_80x24_covers_neither_the_tables_nor_the_why_line(tmp_path: Path) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        app.notify("run 12 ended: matmul cancelled")
        await wait_until(pilot, lambda: app.screen.query("Toast") and app.screen.query_one("Toast").region.width)
        toast = app.screen.query_one("Toast").region
        for selector in ("#bottom", "#stages-table", "#stages-expected"):
            assert not toast.overlaps(app.screen.query_one(selector).region), selector
        assert toast.width <= 32


async def test_an_unstable_figure_keeps_the_trust_column_at_80x24_and_the_why_line_says_how_much(
    tmp_path: Path,
) -> None:
    """Seen in tmux: 'unstable (spread 3x the figure)' in the ± column pushed the trust column off an 80-column
    screen. The cell says "unstable"; the why line says how much and what the figure is worth."""
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=(80, 24)) as pilot:
        app.show(StageStarted("matmul", "cpu", 1, "python"))
        wild = Measurement(
            "matmul", "matmul fp32 512 (numpy)", 26.25, "GFLOP/s", 78.0, 5, "cpu", {}, {"trust": "SUSPECT"}
        )
        app.show(wild)
        await pilot.pause(0.8)
        await pilot.press("n")
        await pilot.pause(0.2)
        table = "\n".join(region_lines(app, "#bench"))
        assert "SUSPECT" in table and "unstable" in table and "the figure)" not in table
        shown = words("\n".join(region_lines(app, "#bench-why")))
        assert "Its repeats are unstable (spread 3x the figure): take it as a rough size only" in shown
