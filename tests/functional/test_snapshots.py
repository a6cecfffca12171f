"""Screens of the app at 80x24 and 120x40, with fake telemetry so they are deterministic."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_main_screen(snap_compare, tmp_path: Path, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cuda:0")
    assert snap_compare(app, terminal_size=size)


def test_contended_host_in_ascii(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples(others=12.0)), device="cpu", ascii_only=True)
    assert snap_compare(app, terminal_size=(80, 24))


def test_results_with_a_suspect_figure_at_80x24(snap_compare, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from stored_runs import two_gpu_run

    store = Store(tmp_path / "s.db")
    run_id = two_gpu_run(store)

    async def open_the_suspect_row(pilot) -> None:  # type: ignore[no-untyped-def]
        pilot.app.show_run(run_id)
        await pilot.pause()
        await pilot.press("down")  # the cuda:1 figure, SUSPECT with its reason

    app = RigcheckApp(store, FakeSampler(h200_samples()), device="cuda:0")
    assert snap_compare(app, terminal_size=(80, 24), run_before=open_the_suspect_row)
