"""Ctrl-C on `serve` stops the runs its tabs started (issue 43: a tab's run went on, LIVE, while the README said
Ctrl-C "stops the server and its tabs"); a run started elsewhere is left alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from pilot_helpers import wait_until
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from stage_infos import fake


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


async def start_waiting_run(store: Store) -> tuple[RigcheckApp, int]:
    """A run of a stage that waits until it is stopped, started by key in the app, as in a tab."""
    app = RigcheckApp(
        store, FakeSampler(h200_samples()), stages=[fake("waits", "polite_wait", timeout=120)], device="cpu"
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        await wait_until(pilot, lambda: app.running and app.run_id is not None)
        run_id = app.run_id
        assert run_id is not None
        if app.link is not None:  # the tab goes; its run goes on until serve stops it
            app.link.close()
            app.link = None
    return app, run_id


def state(store: Store, run_id: int) -> tuple[str, bool]:
    run = store.run(run_id)
    assert run is not None
    return run["status"], store.is_live(run)


async def test_serve_stops_the_runs_its_tabs_started_and_no_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rigcheck.engine.run.cancel import stop
    from rigcheck.tui.serve_runs import SERVE_RUNS_ENV, stop_runs

    store = Store(tmp_path / "s.db")
    folder = tmp_path / "tab-runs"
    folder.mkdir()
    monkeypatch.delenv(SERVE_RUNS_ENV, raising=False)
    _, elsewhere = await start_waiting_run(store)  # an app in a terminal: not a tab of serve's
    try:
        assert not list(folder.iterdir()) and stop_runs(folder, store) == []
        assert state(store, elsewhere) == ("running", True)  # left alone
    finally:
        assert stop(store, elsewhere, 30) is None
    monkeypatch.setenv(SERVE_RUNS_ENV, str(folder))
    _, in_a_tab = await start_waiting_run(store)
    try:
        assert in_a_tab != elsewhere and [p.name for p in folder.iterdir()] == [f"run-{in_a_tab}"]
        said = stop_runs(folder, store)
        assert said == [f"rigcheck serve: stopped run {in_a_tab}, which a tab started"]
        assert state(store, in_a_tab) == ("cancelled", False)
        assert stop_runs(folder, store) == []  # said once: a stopped run is not stopped again
    finally:
        stop(store, in_a_tab, 30)
