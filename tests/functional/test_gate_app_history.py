"""The app's history lists real runs, not the gate's checks (issue 43): after many `check`s on a node, the runs a
person made are still the list, and the checks stay in their own timeline (`rigcheck history --checks`)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from pilot_helpers import wait_until
from rigcheck.engine.gate.keep import keep_check
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.screens.history import HistoryScreen


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "settings.json"
    monkeypatch.setenv("RIGCHECK_CONFIG", str(path))
    return path


async def test_the_apps_history_lists_real_runs_apart_from_checks(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    real = store.begin_run(["matmul"], "cuda:0", "quick", sys.executable, [])
    store.end_run(real, "complete", 0)
    for state in ("OK", "WARN", "CRITICAL"):  # each differs from the one before: none pruned
        facts = {"gate": {"state": state, "summary": f"{state}: x"}, "gpus": []}
        keep_check(store, 0, [], facts, ["check"])
    app = RigcheckApp(store, FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        assert screen.run_ids == [real]
