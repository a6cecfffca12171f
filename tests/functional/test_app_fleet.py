"""The app over a fleet run at 80x24: history opens the hosts x GPUs grid, keys scroll it, enter opens one host."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from fleet_store import FAILING, GPUS, HOSTS, LOST, SLOW_HOST, fleet_run
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.screens.fleet import FleetHostScreen, FleetScreen
from rigcheck.tui.screens.history import HistoryScreen
from rigcheck.tui.widgets.fleet_grid import FleetGrid
from rigcheck.tui.widgets.results_panel import ResultsPanel
from screen_text import screen_text
from textual import events


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


def host_line(text: str, host: str) -> str:
    """The grid's first line for a host (its name, then each GPU's verdict and figure)."""
    return next(line for line in text.splitlines() if line.lstrip().startswith(host))


async def press(pilot, *keys: str) -> None:  # type: ignore[no-untyped-def]
    await pilot.press(*keys)
    await pilot.pause(0.2)


async def test_history_opens_the_fleet_grid_which_scrolls_and_opens_a_host(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = fleet_run(store)
    app = RigcheckApp(store, FakeSampler(h200_samples()), device="cpu", profile="quick")
    async with app.run_test(size=(80, 24)) as pilot:
        await press(pilot, "h")
        assert isinstance(app.screen, HistoryScreen)
        assert "fleet (16 hosts, 1 lost)" in screen_text(app)
        await press(pilot, "enter")
        assert isinstance(app.screen, FleetScreen)
        text = screen_text(app)
        assert f"run {run_id}: fleet r1 of 16 hosts, 1 lost" in text
        assert HOSTS[-1] not in text  # 16 hosts do not fit in 24 rows: the grid must scroll
        lost = text.splitlines()[text.splitlines().index(host_line(text, LOST)) + 1]
        assert lost.split()[0] == "LOST"  # the lost host's state, where "done" stands for the others

        await press(pilot, *["down"] * (len(HOSTS) - 1))
        text = screen_text(app)
        assert host_line(text, HOSTS[-1]) and HOSTS[0] not in text
        failing = host_line(text, FAILING).split()
        assert failing[1:11:2] == ["PASS", "PASS", "PASS", "FAIL", "PASS"]  # cuda:0..4 fit at 80 columns
        assert f"{HOSTS[-1]} (done)" in text  # the detail line follows the cursor

        await press(pilot, *["right"] * (GPUS + 2))
        text = screen_text(app)
        assert f"cuda:{GPUS - 1}" in text and "cuda:0" not in text  # scrolled right ...
        assert host_line(text, HOSTS[-1]).split()[1] == "PASS"  # ... by whole columns, the host names still there
        assert f"{HOSTS[-1]} (done) cuda:{GPUS - 1}:" in text

        await press(pilot, *["up"] * (len(HOSTS) - 1 - HOSTS.index(FAILING)), "enter")
        assert isinstance(app.screen, FleetHostScreen)
        rows = app.screen.query_one(ResultsPanel).rows
        assert rows and {row["host"] for row in rows} == {FAILING}
        assert [row["device"] for row in rows if row["kind"] == "verdict" and row["status"] == "FAIL"] == ["cuda:3"]
        assert f"run {run_id}, host {FAILING} (done): its verdicts and figures" in screen_text(app)

        await press(pilot, "escape")
        assert isinstance(app.screen, FleetScreen)
        assert app.screen.query_one(FleetGrid).cursor_coordinate.row == HOSTS.index(FAILING)
        await press(pilot, "r")  # every host's results in the usual Results tab, each device named with its host
        assert not isinstance(app.screen, FleetScreen | HistoryScreen)
        devices = {row["device"] for row in app.query_one(ResultsPanel).rows}
        assert f"{FAILING} cuda:3" in devices and SLOW_HOST in devices  # its host-level verdict: the host alone
        assert len(devices) == (len(HOSTS) - 1) * GPUS + GPUS // 2 + 1


async def test_the_fleet_screens_keep_to_ascii(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    fleet_run(store)
    app = RigcheckApp(store, FakeSampler(h200_samples()), device="cpu", profile="quick", ascii_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await press(pilot, "h", "enter")
        grid = screen_text(app)
        await press(pilot, "enter")
        host = screen_text(app)
    assert "LOST" in grid and "cuda:3" in host
    for text in (grid, host):
        assert text.isascii(), sorted({c for c in text if not c.isascii()})


async def test_keys_that_arrive_in_one_burst_open_the_host_they_moved_to(tmp_path: Path) -> None:
    """Over SSH arrows and enter come in one read: enter must not run ahead of the arrows (the history too)."""
    store = Store(tmp_path / "s.db")
    fleet_run(store)
    store.end_run(store.begin_run(["probe"], "cpu", "quick", "python3", []), "complete", 0)  # newest: listed first
    app = RigcheckApp(store, FakeSampler(h200_samples()), device="cpu", profile="quick")
    async with app.run_test(size=(80, 24)) as pilot:
        await press(pilot, "h")
        burst(app, "down", "enter")  # down to the fleet run, then open it
        await pilot.pause(0.3)
        assert isinstance(app.screen, FleetScreen)
        burst(app, "down", "down", "down", "enter")
        await pilot.pause(0.3)
        assert isinstance(app.screen, FleetHostScreen) and app.screen.line.host == HOSTS[3]


def burst(app: RigcheckApp, *keys: str) -> None:
    """Keys as the driver sends them, each without waiting for the last to be handled."""
    for key in keys:
        event = events.Key(key, "\r" if key == "enter" else None)
        event.set_sender(app)
        app._driver.send_message(event)  # type: ignore[union-attr]


async def test_the_grid_follows_a_fleet_run_still_going(tmp_path: Path) -> None:
    from rigcheck.engine.events import Status, Verdict

    store = Store(tmp_path / "s.db")
    run_id = store.begin_fleet_run(["matmul"], "quick", "python3", [], {"id": "live", "hosts": ["n1", "n2"]})
    store.record(run_id, Verdict("matmul", "sweep", Status.PASS, "fine", device="cuda:0"), host="n1")
    app = RigcheckApp(store, FakeSampler(h200_samples()), device="cpu", profile="quick")
    async with app.run_test(size=(80, 24)) as pilot:
        app.push_screen(FleetScreen(store, run_id))
        await pilot.pause(0.3)
        assert "FAIL" not in screen_text(app)
        store.record(run_id, Verdict("matmul", "sweep", Status.FAIL, "wrong", device="cuda:0"), host="n2")
        await pilot.pause(1.5)
        assert host_line(screen_text(app), "n2").split()[1] == "FAIL"
