"""What a new user sees in the app at 80x24 and 120x40, driven with Pilot and read off the rendered screen."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from pilot_helpers import row, wait_until
from rigcheck.engine.events import StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.screens.confirm_quit import QUESTION, ConfirmQuit
from rigcheck.tui.screens.detail import DetailScreen
from rigcheck.tui.screens.history import HistoryScreen
from rigcheck.tui.screens.too_small import TooSmallScreen
from rigcheck.tui.widgets.results_panel import ResultsPanel
from screen_text import screen_text
from stage_infos import fake
from stored_runs import two_gpu_run

SIZES = [(80, 24), (120, 40)]


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


def region_text(app: RigcheckApp, selector: str) -> str:
    """The screen's text inside one widget's region: what of that widget the terminal really shows."""
    region = app.screen.query_one(selector).region
    lines = screen_text(app).splitlines()
    assert region.right <= app.size.width and region.bottom <= app.size.height, "the widget runs off the screen"
    return "\n".join(line[region.x : region.right] for line in lines[region.y : region.bottom])


def app_for(store: Store, stages: list | None = None, ascii_only: bool = False) -> RigcheckApp:  # type: ignore[type-arg]
    return RigcheckApp(
        store, FakeSampler(h200_samples()), stages=stages, device="cpu", profile="quick", ascii_only=ascii_only
    )


def results(app: RigcheckApp) -> list[dict]:  # type: ignore[type-arg]
    return [r for r in app.query_one(ResultsPanel).rows if r["kind"] == "verdict"]


async def test_each_run_starts_clean(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    app = app_for(store, [fake("ok"), fake("fails")])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        await wait_until(pilot, lambda: not app.running and row(app, "ok")[2] == "done")
        assert app.query_one("#bench").row_count == 1
        await pilot.press("2")
        await wait_until(pilot, lambda: not app.running and row(app, "fails")[2] == "done")
        assert row(app, "ok")[2] == "idle" and row(app, "ok")[4] == ""  # the last run's verdict is gone
        assert app.query_one("#bench").row_count == 0  # and its figure
        names = [r["name"] for r in app.query_one(ResultsPanel).rows]
        assert names == ["check"]
        assert "Results: run 2" in screen_text(app)


async def test_expected_duration_comes_from_earlier_runs(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    app = app_for(store, [fake("ok"), fake("fails")])
    async with app.run_test(size=(80, 24)) as pilot:
        assert "expected: no earlier run" in screen_text(app)
    for seconds in (40.0, 50.0, 45.0):
        run_id = store.begin_run(["ok"], "cpu", "quick", "python", [])
        store.record(run_id, StageStarted("ok", "cpu", 1, "python", t=100.0))
        store.record(run_id, StageFinished("ok", Status.PASS, 0, t=100.0 + seconds))
    run_id = store.begin_run(["ok"], "cpu", "full", "python", [])
    store.record(run_id, StageStarted("ok", "cpu", 1, "python", t=100.0))
    store.record(run_id, StageFinished("ok", Status.PASS, 0, t=100.0 + 3725.0))
    app = app_for(store, [fake("ok"), fake("fails")])
    async with app.run_test(size=(80, 24)) as pilot:
        text = screen_text(app)
        assert "expected: ~45s + 1 stage not run before" in text
        assert row(app, "ok")[3] == "~45s" and row(app, "fails")[3] == ""
        await pilot.press("p")  # quick -> standard: nothing known there
        await pilot.pause(0.1)
        assert "expected: no earlier run" in screen_text(app) and row(app, "ok")[3] == ""
        await pilot.press("p")  # -> full
        await pilot.pause(0.1)
        assert "expected: ~1h02m + 1 stage not run before" in screen_text(app) and row(app, "ok")[3] == "~1h02m"


async def test_history_enter_opens_the_run_and_marks_show(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    two_gpu_run(store)
    second = store.begin_run(["probe"], "cpu", "quick", "python", [])
    store.record(second, Verdict("probe", "build", Status.PASS, "fine"))
    store.end_run(second, "complete", 0)
    app = app_for(store)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("h")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HistoryScreen)
        text = screen_text(app)
        history_rows = {line.split()[0]: line for line in text.splitlines() if re.match(r"\s+\d+\s", line)}
        assert "FAIL" in history_rows["1"] and "PASS" in history_rows["2"]  # the worst verdict, not "complete"
        assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d", history_rows["1"])  # the whole date at 80 columns
        await pilot.press("space")
        await pilot.pause(0.1)
        marked = [line for line in screen_text(app).splitlines() if re.match(r"\s*\*\s+2\s", line)]
        assert marked, "the marked run shows no mark"
        await pilot.press("down", "enter")
        await pilot.pause(0.2)
        assert not isinstance(app.screen, HistoryScreen)
        assert app.query_one("#bottom").active == "tab-results"
        assert "Results: run 1" in screen_text(app) and len(app.query_one(ResultsPanel).rows) == 5


async def test_the_palette_offers_only_rigchecks_three_themes(tmp_path: Path) -> None:
    app = app_for(Store(tmp_path / "s.db"))
    async with app.run_test(size=(80, 24)):
        assert sorted(app.available_themes) == ["rigcheck-contrast", "rigcheck-dark", "rigcheck-light"]
        assert app.theme == "rigcheck-dark"


async def ascii_screens(app: RigcheckApp, pilot, run_id: int) -> list[tuple[str, str]]:  # type: ignore[no-untyped-def]
    """Every screen a user can reach, as rendered text."""
    shots = [("main", screen_text(app))]
    app.show_run(run_id)
    await pilot.pause(0.2)
    shots.append(("results", screen_text(app)))
    await pilot.press("enter")
    await pilot.pause(0.1)
    shots.append(("detail", screen_text(app)))
    await pilot.press("escape", "h")
    await pilot.pause(0.2)
    shots.append(("history", screen_text(app)))
    await pilot.press("space", "down", "space", "c")
    await pilot.pause(0.2)
    shots.append(("compare", screen_text(app)))
    await pilot.press("escape", "escape")
    app.push_screen(ConfirmQuit())
    await pilot.pause(0.2)
    shots.append(("quit", screen_text(app)))
    await pilot.press("n", "ctrl+p")
    await pilot.pause(0.3)
    shots.append(("palette", screen_text(app)))
    await pilot.press("escape")
    app.notify("a toast … with ± Unicode — in it")
    await pilot.pause(0.2)
    shots.append(("toast", screen_text(app)))
    return shots


@pytest.mark.parametrize("size", SIZES)
async def test_ascii_leaves_no_unicode_on_any_screen(tmp_path: Path, size: tuple[int, int]) -> None:
    store = Store(tmp_path / "s.db")
    run_id = two_gpu_run(store)
    two_gpu_run(store)
    app = RigcheckApp(store, FakeSampler(h200_samples(others=12.0)), device="cuda:0", ascii_only=True)
    async with app.run_test(size=size) as pilot:
        await pilot.pause(0.3)
        shots = await ascii_screens(app, pilot, run_id)
    for name, text in shots:
        odd = sorted({c for c in text if not c.isascii()})
        assert not odd, f"{name} screen at {size}: {odd}"
    assert any("+-" in text for _, text in shots)  # borders drawn in ASCII, not left out


async def test_without_ascii_the_same_screens_use_unicode(tmp_path: Path) -> None:
    """The clean case: the scan above finds Unicode when --ascii is off, so it would catch a leak."""
    store = Store(tmp_path / "s.db")
    run_id = two_gpu_run(store)
    app = RigcheckApp(store, FakeSampler(h200_samples(others=12.0)), device="cuda:0")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        shots = await ascii_screens(app, pilot, run_id)
    assert all(any(not c.isascii() for c in text) for _, text in shots)


def test_ascii_keeps_every_cell_in_its_place() -> None:
    from rich.cells import cell_len
    from rigcheck.tui.ascii_screen import ascii_text

    for text in ("╭─ Stages ─╮│┃┏━┓", "█████░░░ 62% ▁▂▃▄▅▆▇█", "…🔎é⅃Ⅲ Ａ日本", "⣿⠀⠁▚▙ ←→ ± •"):
        out = ascii_text(text)
        assert out.isascii() and cell_len(out) == cell_len(text), (text, out)
    assert ascii_text("╭─╮│ │╰─╯") == "+-+| |+-+" and ascii_text("plain text") == "plain text"


@pytest.mark.parametrize("size", SIZES)
async def test_results_tell_devices_apart_keep_units_and_show_why_a_figure_is_suspect(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    store = Store(tmp_path / "s.db")
    run_id = two_gpu_run(store)
    app = app_for(store)
    async with app.run_test(size=size) as pilot:
        app.show_run(run_id)
        await pilot.pause(0.2)
        table = app.query_one("#results-table")
        devices = [str(table.get_row_at(i)[2]) for i in range(table.row_count)]
        assert devices.count("cuda:0") == 3 and devices.count("cuda:1") == 2
        text = screen_text(app)
        assert "Results: run 1" in text
        assert "51.18 GFLOP/s" in text and "131.9 GFLOP/s" in text  # units whole, even at 80 columns
        assert "NOISY" in text and "ODD" in text  # a trust word this version does not know is still shown
        for _ in range(table.row_count):
            cells = [str(cell) for cell in table.get_row_at(table.cursor_row)]
            if cells[2] == "cuda:1" and "GFLOP" in cells[4]:
                break
            await pilot.press("down")
        await pilot.pause(0.1)
        text = screen_text(app)
        assert "matmul fp32 4096 on cuda:1 is SUSPECT: SM clock at 73% of max: power cap." in text  # its detail
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert isinstance(app.screen, DetailScreen)
        text = screen_text(app)
        assert "Note: Power-limited at 700 W." in text and "Verified: yes." in text
        await pilot.press("escape")
        await pilot.pause(0.1)
        assert not isinstance(app.screen, DetailScreen)


async def test_results_are_one_key_away(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    app = app_for(store, [fake("ok")])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("1")
        await wait_until(pilot, lambda: not app.running and row(app, "ok")[2] == "done")
        await pilot.press("r")
        await pilot.pause(0.1)
        assert app.query_one("#bottom").active == "tab-results"
        assert app.focused is app.query_one("#results-table")
        await pilot.press("enter")
        await pilot.pause(0.1)
        assert isinstance(app.screen, DetailScreen)


@pytest.mark.parametrize("size", SIZES)
async def test_the_quit_question_is_whole(tmp_path: Path, size: tuple[int, int]) -> None:
    app = app_for(Store(tmp_path / "s.db"))
    async with app.run_test(size=size) as pilot:
        app.push_screen(ConfirmQuit())
        await pilot.pause(0.2)
        question = " ".join(region_text(app, "#quit-question").split())
        assert question == " ".join(QUESTION.split())
        buttons = region_text(app, "ConfirmQuit Horizontal")
        assert "Stay (n)" in buttons and "Stop it (s)" in buttons and "Leave running (l)" in buttons


async def test_below_80x24_the_app_says_the_terminal_is_too_small(tmp_path: Path) -> None:
    app = app_for(Store(tmp_path / "s.db"))
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.pause(0.2)
        assert isinstance(app.screen, TooSmallScreen)
        lines = [line for line in screen_text(app).splitlines() if line.strip()]
        assert lines == [lines[0]] and "terminal 60x20 is too small: rigcheck needs 80x24" in lines[0]
        left, right = len(lines[0]) - len(lines[0].lstrip()), len(lines[0]) - len(lines[0].rstrip())
        assert abs(left - right) <= 1  # centred
        await pilot.resize_terminal(80, 24)
        await pilot.pause(0.2)
        assert not isinstance(app.screen, TooSmallScreen) and "Stages" in screen_text(app)
        await pilot.resize_terminal(100, 23)
        await pilot.pause(0.2)
        assert isinstance(app.screen, TooSmallScreen)


async def test_a_cancelled_stage_shows_as_cancelled_where_it_stopped(tmp_path: Path) -> None:
    app = app_for(Store(tmp_path / "s.db"), [fake("polite_wait"), fake("ok")])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("a")
        await wait_until(pilot, lambda: row(app, "polite_wait")[3].strip().endswith("0%"))
        await pilot.press("c")
        await wait_until(pilot, lambda: not app.running)
        cancelled, after = row(app, "polite_wait"), row(app, "ok")
        assert cancelled[2] == "cancelled" and "100%" not in cancelled[3] and cancelled[3].endswith("50%")
        assert after[2] == "done" and after[4] == "PASS"  # the next stage still ran


async def test_a_running_stage_shows_a_failure_at_once_but_no_pass_before_its_end(tmp_path: Path) -> None:
    app = app_for(Store(tmp_path / "s.db"), [fake("pass_then_wait"), fake("fail_then_wait")])
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("1")
        await wait_until(pilot, lambda: "first check" in "\n".join(r["explanation"] for r in results(app)))
        assert row(app, "pass_then_wait")[2] == "running" and row(app, "pass_then_wait")[4] == ""
        await pilot.press("c")
        await wait_until(pilot, lambda: not app.running)
        await pilot.press("2")
        await wait_until(pilot, lambda: any(r["status"] == "FAIL" for r in results(app)))
        await pilot.pause(0.1)
        assert row(app, "fail_then_wait")[2] == "running" and row(app, "fail_then_wait")[4] == "FAIL"
        await pilot.press("c")
        await wait_until(pilot, lambda: not app.running)
