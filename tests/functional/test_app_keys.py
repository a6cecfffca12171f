"""Issue 34, item 8: every key is on a screen (stage keys in the footer, tab keys in the tab labels), the Keys
panel names each key once and esc closes it, and the Burn tab says how to start a burn."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from pilot_helpers import row, wait_until
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from screen_text import screen_text
from stage_infos import fake
from textual.widgets import HelpPanel

SIZES = [(80, 24), (120, 40)]


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


def footer(app: RigcheckApp) -> str:
    return screen_text(app).splitlines()[-1]


def app_for(tmp_path: Path, stages: list | None = None) -> RigcheckApp:  # type: ignore[type-arg]
    return RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), stages=stages, device="cpu")


@pytest.mark.parametrize("size", SIZES)
async def test_the_stage_keys_and_the_tab_keys_are_on_the_screen(tmp_path: Path, size: tuple[int, int]) -> None:
    app = app_for(tmp_path)
    async with app.run_test(size=size) as pilot:
        await wait_until(pilot, lambda: "Quit" in footer(app))  # the footer is drawn once bindings are known
        lines = screen_text(app).splitlines()
        for said in ("1-9 Stage", "a Run all", "d Device", "p Profile", "h History", "? Keys", "^q Quit"):
            assert said in lines[-1], (said, lines[-1])
        tabs = next(line for line in lines if "Running" in line and "Burn" in line)
        for said in ("n Running", "r Results", "i Device", "l Log", "o Processes", "b Burn"):
            assert said in tabs, (said, tabs)


async def test_while_a_run_goes_on_the_footer_shows_cancel_and_hidden_keys_say_why_not(tmp_path: Path) -> None:
    app = app_for(tmp_path, [fake("polite_wait"), fake("ok")])
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.press("1")
        await wait_until(pilot, lambda: row(app, "polite_wait")[2] == "running")
        await wait_until(pilot, lambda: "c Cancel" in footer(app))
        assert "1-9 Stage" not in footer(app) and "a Run all" not in footer(app)
        await pilot.press("2")
        await pilot.pause(0.2)
        assert any("a run is in progress" in n.message for n in app._notifications)
        assert row(app, "ok")[2] == "idle"  # and nothing started
        await pilot.press("c")
        await wait_until(pilot, lambda: not app.running)
        await wait_until(pilot, lambda: "1-9 Stage" in footer(app))
        assert "c Cancel" not in footer(app)


async def test_the_keys_panel_names_each_key_once_and_esc_closes_it(tmp_path: Path) -> None:
    app = app_for(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        assert app.screen.query(HelpPanel)
        shown = {
            binding.description: key
            for key, (_, binding, _, _) in app.screen.active_bindings.items()
            if not binding.system and binding.description
        }
        actions = {b.action: b.description for _, b, _, _ in app.screen.active_bindings.values() if not b.system}
        names = [name for name in actions.values() if name]  # one binding with two keys (^q, ^c) counts once
        assert len(names) == len(set(names)), sorted(names)  # `d` and `i` were both "Device"
        assert shown["Device"] == "d" and shown["Device tab"] == "i"
        await pilot.press("escape")
        await pilot.pause(0.3)
        assert not app.screen.query(HelpPanel)
        await pilot.press("f1")
        await pilot.pause(0.3)
        assert app.screen.query(HelpPanel)
        await pilot.press("question_mark")
        await pilot.pause(0.3)
        assert not app.screen.query(HelpPanel)


async def test_the_burn_tab_says_how_to_start_a_burn_until_one_runs(tmp_path: Path) -> None:
    app = app_for(tmp_path)  # the real registry: burn is the ninth stage
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("b")
        await pilot.pause(0.3)
        text = " ".join(screen_text(app).split())
        assert "No burn in this session yet." in text and "press 9 to run it alone" in text
        assert "choose the full profile (p) and press a" in text
    without = app_for(tmp_path, [fake("ok")])
    async with without.run_test(size=(80, 24)) as pilot:
        await pilot.press("b")
        await pilot.pause(0.3)
        assert "without the burn stage" in " ".join(screen_text(without).split())
