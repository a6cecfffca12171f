"""Issue 44: the app's history screen showed stored escapes, and its Results crashed on a figure whose stored value
was NULL or text (the app then exited 0). Both read the store through its reader: escapes gone, the value unknown."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from pilot_helpers import wait_until
from rigcheck.engine.events import Measurement, StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.report.rows import value_text
from rigcheck.engine.store import Store
from rigcheck.tui.screens.history import HistoryScreen
from rigcheck.tui.widgets.results_panel import ResultsPanel
from screen_text import screen_text
from test_app_screens import app_for


@pytest.mark.parametrize("value", ["NULL", "'abc'", "787.2"])
async def test_history_is_inert_and_results_show_a_tampered_value_as_unknown(tmp_path: Path, value: str) -> None:
    path = tmp_path / "s.db"
    store = Store(path)
    run_id = store.begin_run(["matmul"], "cpu", "quick", "python", [])
    store.record(run_id, StageStarted("matmul", "cpu", 1, "python"))
    store.record(run_id, Measurement("matmul", "matmul fp32 512", 787.2, "GFLOP/s", 1.0, 5, "cpu", {}, {}))
    store.record(run_id, Verdict("matmul", "check", Status.PASS, "fine"))
    store.record(run_id, StageFinished("matmul", Status.PASS, 0))
    store.end_run(run_id, "complete", 0)
    raw = sqlite3.connect(path)
    raw.execute(f"UPDATE measurements SET value = {value}")
    raw.execute("UPDATE runs SET profile = char(27) || ']2;PWNED' || char(7) || 'quick' || char(27) || '[31m'")
    raw.commit()
    raw.close()
    app = app_for(Store(path))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("h")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen))
        table = app.screen.query_one("DataTable")
        cells = [str(cell) for key in table.rows for cell in table.get_row(key)]
        assert any("quick" in cell for cell in cells) and not any("\x1b" in cell or "\x07" in cell for cell in cells)
        await pilot.press("enter")
        await wait_until(pilot, lambda: not isinstance(app.screen, HistoryScreen))
        await pilot.pause(0.2)
        rows = [r for r in app.query_one(ResultsPanel).rows if r["kind"] == "measurement"]
        assert rows and (rows[0]["value"] is None) == (value != "787.2")
        shown = value_text(rows[0])
        assert shown == ("787.2 GFLOP/s" if value == "787.2" else "unknown GFLOP/s")
        assert shown in screen_text(app)
    assert app.return_code in (None, 0)
