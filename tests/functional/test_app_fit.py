"""What fits at 80x24 and 120x40: every tab has a key and a palette command, the Stages panel says which rows
show, the expected time and the Host-load numbers are never cut, and compare keeps its ratio on screen."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from rigcheck.engine.events import Measurement, StageFinished, StageStarted, Status
from rigcheck.engine.store import Store
from rigcheck.tui.app import TABS, RigcheckApp
from rigcheck.tui.screens.history import CompareScreen
from rigcheck.tui.widgets.stages_panel import StagesPanel, expected_text
from screen_text import screen_text
from textual.fuzzy import Matcher
from textual.widgets import TabbedContent

SIZES = [(80, 24), (120, 40)]


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


def app_for(store: Store, others: float = 1.0) -> RigcheckApp:
    return RigcheckApp(store, FakeSampler(h200_samples(others=others)), device="cpu", engine_telemetry=False)


@pytest.mark.parametrize("size", SIZES)
async def test_every_tab_has_a_key_and_a_palette_command(tmp_path: Path, size: tuple[int, int]) -> None:
    app = app_for(Store(tmp_path / "s.db"))
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.2)
        tabs = app.query_one(TabbedContent)
        panes = [pane.id for pane in tabs.query("TabPane")]
        keys = {"tab-results": "r", "tab-processes": "o"} | {tab: key for key, tab, _, _ in TABS}
        assert set(panes) == set(keys), "a tab without a key"
        for pane in panes:
            await pilot.press(keys[pane])
            await pilot.pause(0.1)
            assert tabs.active == pane, pane
        titles = [command.title for command in app.get_system_commands(app.screen)]
    for label in ("Running", "Results", "Device", "Log", "Processes", "Burn"):
        best = max(titles, key=Matcher(label.lower()).match)  # what the palette puts first for the word
        assert best == label, (label, best)


@pytest.mark.parametrize("size", SIZES)
async def test_the_stages_panel_says_which_rows_show(tmp_path: Path, size: tuple[int, int]) -> None:
    app = app_for(Store(tmp_path / "s.db"))
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        panel = app.query_one(StagesPanel)
        table = panel.query_one("#stages-table")
        if size == (120, 40):
            assert panel.border_subtitle == ""  # all nine show
            return
        assert panel.border_subtitle == "1-7 of 9, more below"
        assert "1-7 of 9, more below" in screen_text(app)
        table.move_cursor(row=8)
        await pilot.pause(0.3)
        assert panel.border_subtitle == "3-9 of 9, more above"


async def test_the_stages_extent_follows_the_time_line_as_it_shows_and_hides(tmp_path: Path) -> None:
    """At 80x24 the run's time line takes a row from the table while a run goes on; once it hides, the border
    must say the row came back (it said "3-8 of 9, more above and below" over rows 3-9)."""
    import time

    app = app_for(Store(tmp_path / "s.db"))
    async with app.run_test(size=(80, 24)) as pilot:
        app._show_times = lambda: None  # type: ignore[method-assign]  # the test alone moves the time line
        await pilot.pause(0.3)
        panel = app.query_one(StagesPanel)
        assert panel.border_subtitle == "1-7 of 9, more below"
        panel.set_times((time.time(), list(panel.stage_names)), None, time.time())
        await pilot.pause(0.3)
        assert panel.border_subtitle == "1-6 of 9, more below"
        panel.set_times(None, None, time.time())
        await pilot.pause(0.3)
        assert panel.border_subtitle == "1-7 of 9, more below"


def test_the_expected_time_fits_the_panel_whatever_it_says() -> None:
    stages = [f"stage{i}" for i in range(12)]
    worst = expected_text(stages, {"stage0": 3 * 3600 + 59 * 60})  # hours, and 11 stages never run
    assert worst == "expected: ~3h59m + 11 stages not run before" and len(worst) <= 44


@pytest.mark.parametrize("size", SIZES)
async def test_the_expected_time_is_not_cut(tmp_path: Path, size: tuple[int, int]) -> None:
    store = Store(tmp_path / "s.db")
    for stage, seconds in (("probe", 60.0), ("health", 100.0), ("verify", 107.0)):
        run_id = store.begin_run([stage], "cpu", "standard", "python", [])
        store.record(run_id, StageStarted(stage, "cpu", 1, "python", t=100.0))
        store.record(run_id, StageFinished(stage, Status.PASS, 0, t=100.0 + seconds))
    app = app_for(store)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        assert "expected: ~4m27s + 6 stages not run before" in screen_text(app)


@pytest.mark.parametrize("size", SIZES)
async def test_a_contended_host_keeps_its_numbers_on_screen(tmp_path: Path, size: tuple[int, int]) -> None:
    app = app_for(Store(tmp_path / "s.db"), others=12.0)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.5)
        host = app.query_one("#host")
        text = screen_text(app)
        assert "others   12.0/16" in text and "load 2.50" in text  # the count and the load, whole
        wide = "Host load: CONTENDED, figures now SUSPECT"
        assert (wide if size == (120, 40) else "Host load: CONTENDED") in text
        assert host.has_class("contended")


def stored_run(store: Store, values: dict[tuple[str, str], float]) -> int:
    run_id = store.begin_run(["matmul", "burn"], "cpu", "quick", sys.executable, [])
    for (stage, name), value in values.items():
        conditions = {"trust": "TRUSTED", "verified": True}
        spread = value * 0.012
        store.record(run_id, Measurement(stage, name, value, "GFLOP/s", spread, 5, "cpu", conditions=conditions))
    store.end_run(run_id, "complete", 0)
    return run_id


@pytest.mark.parametrize("size", SIZES)
async def test_compare_keeps_the_ratio_on_screen_and_sorts_by_stage_then_number(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    store = Store(tmp_path / "s.db")
    names = [("matmul", "matmul fp32 1024"), ("matmul", "matmul fp32 256"), ("burn", "burn fp32 at 11 s")]
    names.append(("burn", "burn fp32 at 2 s"))
    stored_run(store, dict.fromkeys(names, 100.0))
    stored_run(store, dict.fromkeys(names, 123.4))
    app = app_for(store)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.2)
        app.push_screen(CompareScreen(store, 1, 2))
        await pilot.pause(0.3)
        table = app.screen.query_one("#compare-table")
        figures = [f"{table.get_row_at(i)[0]} [{table.get_row_at(i)[1]}]" for i in range(table.row_count)]
        text = screen_text(app)
    assert figures == [
        "matmul fp32 256 [cpu]",
        "matmul fp32 1024 [cpu]",
        "burn fp32 at 2 s [cpu]",
        "burn fp32 at 11 s [cpu]",
    ]
    rows = [line for line in text.splitlines() if "100 TRUSTED" in line]
    assert len(rows) == 4  # every figure on screen, at 80 columns too, with both sides, its unit and its ratio
    assert all("123.4 TRUSTED" in line and "GFLOP/s" in line and "1.234" in line for line in rows), rows


@pytest.mark.parametrize("size", SIZES)
async def test_the_clocks_panel_says_there_is_no_nvidia_driver_in_words(tmp_path: Path, size: tuple[int, int]) -> None:
    from rigcheck.engine.telemetry.sample import HostSample, Sample

    host = HostSample(cpus=2, load1=0.5, busy_cpus=0.3, own_cpus=0.1, cpu_mhz=2596.0)
    samples = [Sample(1.0 + i, host) for i in range(5)]
    notes = ("nvml: NVMLError_LibraryNotFound: NVML Shared Library Not Found",)
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(samples, notes), device="cpu")
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.5)
        small = size == (80, 24)  # one line a trace there, the note wrapped below them
        shown = app.query_one("#clocks-spark" if small else "#clocks-host").plain
    text = " ".join(shown.split())
    assert "no GPU telemetry: no NVIDIA driver" in text and "NVMLError" not in text and "…" not in text
