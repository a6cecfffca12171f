"""The app's Burn tab: burn intervals become one line per device, a new burn starts them afresh."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from rigcheck.engine.events import Measurement, StageStarted
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.widgets.burn_plot import BurnPlot


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


def interval(device: str, index: int, value: float, clock: float | None = None) -> Measurement:
    conditions = {"sm_clock_mean_mhz": clock} if clock else {}
    params = {"interval": index, "elapsed_s": 6.0 * (index + 1)}
    return Measurement(
        "burn", f"burn bfloat16 8192 at {6 * (index + 1)} s", value, "TFLOP/s", None, 1, device, params, conditions
    )


async def test_burn_intervals_draw_a_line_per_device_and_the_running_stage_is_scrolled_to(tmp_path: Path) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="all")
    async with app.run_test(size=(80, 24)) as pilot:
        for event in (
            StageStarted("burn", "all", 1, "python"),
            interval("cuda:0", 0, 700.0, 1980.0),
            interval("cuda:1", 0, 690.0, 1975.0),
            interval("cuda:0", 1, 610.0, 1700.0),
            Measurement("matmul", "bf16 8192", 790.0, "TFLOP/s", device="cuda:0"),  # not a burn interval
        ):
            app.show(event)  # as the app shows what it follows from the store
        await pilot.pause(0.3)
        plot = app.query_one(BurnPlot)
        assert plot.rates == {"cuda:0": [(6.0, 700.0), (12.0, 610.0)], "cuda:1": [(6.0, 690.0)]}
        assert plot.clocks["cuda:0"] == [(6.0, 1980.0), (12.0, 1700.0)]
        table = app.query_one("#stages-table")
        assert table.cursor_row == table.get_row_index("burn")  # the last row, below the fold at 80x24
        assert table.scroll_y > 0  # and the table scrolled to show it
        app.show(interval("cuda:0", 0, 705.0))  # a new burn
        await pilot.pause(0.2)
        assert plot.rates["cuda:0"] == [(6.0, 705.0)]


async def test_a_burn_without_a_gpu_clock_does_not_promise_one_on_the_right(tmp_path: Path) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=(80, 24)) as pilot:
        app.show(StageStarted("burn", "cpu", 1, "python"))
        cpu = interval("cpu", 0, 90.0)
        app.show(Measurement("burn", cpu.name, 90.0, "GFLOP/s", None, 1, "cpu", cpu.params, {}))
        await pilot.pause(0.2)
        plot = app.query_one(BurnPlot)
        assert plot.shown_title == "burn: throughput (no SM clock known)"
        assert plot.units == {"cpu": "GFLOP/s"}
        app.show(interval("cuda:0", 0, 700.0, 1980.0))  # a GPU with its clock: now there is one on the right
        await pilot.pause(0.2)
        assert plot.shown_title == "burn: throughput, and SM clock on the right"
