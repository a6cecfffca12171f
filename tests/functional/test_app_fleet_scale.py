"""The app's fleet grid over 1,024 hosts x 8 GPUs (issue 25): it opens, it scrolls to the last host and back,
and enter opens one host. Each step waits for what it shows, never for a clock: how fast it opens is a speed
target, measured by bench/fleet_grid_open.py (bench/RESULTS.md records it), not asserted here (issue 45)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from fleet_store import big_fleet_run, big_hosts
from pilot_helpers import wait_until
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.screens.fleet import FleetHostScreen, FleetScreen
from rigcheck.tui.widgets.fleet_grid import FleetGrid
from screen_text import screen_text

HOSTS = 1024
BOUND_S = 300.0  # only against a hang: a loaded 2-core machine took 12 s to open it (bench/fleet_grid_open.py)


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


def filled(screen: FleetScreen) -> bool:
    grids = screen.query(FleetGrid)
    return bool(grids) and grids.first().row_count == HOSTS


async def test_the_grid_of_1024_hosts_opens_scrolls_and_opens_a_host(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = big_fleet_run(store, HOSTS)
    hosts = big_hosts(HOSTS)
    app = RigcheckApp(store, FakeSampler(h200_samples()), device="cpu", profile="quick")
    async with app.run_test(size=(120, 40)) as pilot:
        app.push_screen(FleetScreen(store, run_id))
        await wait_until(pilot, lambda: isinstance(app.screen, FleetScreen) and filled(app.screen), BOUND_S)
        await wait_until(pilot, lambda: f"fleet big of {HOSTS} hosts, 1 lost" in screen_text(app), BOUND_S)
        text = screen_text(app)
        assert hosts[0] in text and hosts[-1] not in text

        await pilot.press("ctrl+end")
        grid = app.screen.query_one(FleetGrid)
        await wait_until(pilot, lambda: grid.cursor_coordinate.row == HOSTS - 1, BOUND_S)
        await wait_until(pilot, lambda: hosts[-1] in screen_text(app), BOUND_S)
        assert hosts[0] not in screen_text(app)
        await pilot.press("ctrl+home", "home", *["down"] * 11)
        await wait_until(pilot, lambda: grid.cursor_coordinate.row == 11, BOUND_S)
        await wait_until(pilot, lambda: hosts[11] in screen_text(app), BOUND_S)
        await pilot.press("right", "enter")
        await wait_until(pilot, lambda: isinstance(app.screen, FleetHostScreen), BOUND_S)
        await wait_until(pilot, lambda: f"host {hosts[11]} (done)" in screen_text(app), BOUND_S)
