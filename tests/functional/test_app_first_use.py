"""Issue 43, item 7, in the app as a newcomer meets it: the figures are reached by up and enter as the line under
them says, without pressing n first; and the Stages panel shows INCONCLUSIVE and NOT JUDGED whole from 100
columns on (shortened below, where they cannot fit)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from pilot_helpers import wait_until
from rigcheck.engine.events import Measurement, StageStarted, Status
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.screens.detail import DetailScreen
from rigcheck.tui.widgets.bench_panel import BenchPanel
from rigcheck.tui.widgets.stages_panel import StagesPanel
from screen_text import screen_text

SIZES = [(80, 24), (120, 40)]


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


def figure(name: str) -> Measurement:
    conditions = {"trust": "TRUSTED", "trust_reasons": [], "verified": True}
    return Measurement("matmul", name, 163.6, "GFLOP/s", 3.0, 5, "cpu", {}, conditions)


def app_of(tmp_path: Path) -> RigcheckApp:
    return RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cpu")


@pytest.mark.parametrize("size", SIZES)
async def test_up_and_enter_reach_the_figures_without_pressing_n(tmp_path: Path, size: tuple[int, int]) -> None:
    app = app_of(tmp_path)
    async with app.run_test(size=size) as pilot:
        bench = app.query_one(BenchPanel)
        app.show(StageStarted("matmul", "cpu", 1, "python"))
        for name in ("cpu fp32 256", "cpu fp32 512", "cpu fp32 1024"):
            app.show(figure(name))
        await wait_until(pilot, lambda: bench.row_count == 3)
        await pilot.press("up")  # the cursor follows the newest figure: up goes to the one before it
        await wait_until(pilot, lambda: bench.cursor_row == 1)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, DetailScreen))
        assert "cpu fp32 512" in " ".join(screen_text(app).split())


async def test_a_table_the_user_chose_keeps_its_keys_when_figures_come(tmp_path: Path) -> None:
    app = app_of(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("r")  # the Results tab, its table focused, before any figure
        results = app.query_one("#results-table")
        await wait_until(pilot, lambda: app.focused is results)
        app.show(StageStarted("matmul", "cpu", 1, "python"))
        app.show(figure("cpu fp32 256"))
        await wait_until(pilot, lambda: app.query_one(BenchPanel).row_count == 1)
        await pilot.pause(0.1)
        assert app.focused is results


@pytest.mark.parametrize(("width", "whole"), [(80, False), (99, False), (100, True), (120, True)])
async def test_the_stages_panel_shows_long_verdicts_whole_from_100_columns(
    tmp_path: Path, width: int, whole: bool
) -> None:
    app = app_of(tmp_path)
    async with app.run_test(size=(width, 40)) as pilot:
        panel = app.query_one(StagesPanel)
        panel.set_verdict("verify", Status.INCONCLUSIVE)
        panel.set_verdict("matmul", Status.NOT_JUDGED)
        panel.set_verdict("probe", Status.PASS)
        await pilot.pause(0.1)
        text = screen_text(app)
        shown = ("INCONCLUSIVE", "NOT JUDGED") if whole else ("INCONCL ", "NOT JDG ")
        assert all(word in text for word in shown), text
        assert ("INCONCL " in text) != whole and "PASS" in text


async def test_the_verdicts_follow_the_terminal_across_the_edge(tmp_path: Path) -> None:
    app = app_of(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.query_one(StagesPanel)
        panel.set_verdict("verify", Status.INCONCLUSIVE)
        await pilot.pause(0.1)
        assert "INCONCLUSIVE" in screen_text(app)
        await pilot.resize_terminal(80, 24)
        await wait_until(pilot, lambda: "INCONCL " in screen_text(app) and panel.region.width == 48)
        await pilot.resize_terminal(120, 40)
        await wait_until(pilot, lambda: "INCONCLUSIVE" in screen_text(app))
