"""What keeps the app's frames cheap: a growing table lays out the screen only when its box changes, a hidden
tab is drawn when shown, and the idle app redraws its gauges at half the live rate; what is shown stays the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from pilot_helpers import wait_until
from rigcheck.engine.store import Store
from rigcheck.tui.app import IDLE_REDRAW_EVERY, IDLE_SAMPLE_S, RigcheckApp
from rigcheck.tui.widgets.processes_panel import ProcessesPanel
from rigcheck.tui.widgets.steady_table import SteadyTable
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Static, TabbedContent, TabPane


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "settings.json"
    monkeypatch.setenv("RIGCHECK_CONFIG", str(path))
    return path


class Tables(App[None]):
    CSS = "#shown { max-height: 8; }"

    def compose(self) -> ComposeResult:
        with TabbedContent(initial="one"):
            with TabPane("one", id="one"):
                yield SteadyTable(id="shown")
            with TabPane("two", id="two"):
                yield SteadyTable(id="hidden")

    def on_mount(self) -> None:
        for table in self.query(SteadyTable):
            table.add_column("name", key="name")


def count_layouts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    layouts = [0]
    original = Screen._refresh_layout

    def counted(self: Screen, *args: object, **kwargs: object) -> None:
        layouts[0] += 1
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Screen, "_refresh_layout", counted)
    return layouts


async def test_a_table_that_scrolls_already_takes_new_rows_without_a_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    layouts = count_layouts(monkeypatch)
    app = Tables()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one("#shown", SteadyTable)
        await pilot.pause()
        skipped = table.layouts_skipped
        for n in range(3):  # the table grows: its box changes, so the screen is laid out
            table.add_row(f"row {n}")
            await pilot.pause()
        assert table.layouts_skipped == skipped and table.size.height == 4  # header and three rows
        for n in range(3, 12):
            table.add_row(f"row {n}")
            await pilot.pause()
        assert table.show_vertical_scrollbar and table.size.height == 8
        before, skipped = layouts[0], table.layouts_skipped
        for n in range(12, 40):
            table.add_row(f"row {n}")
            table.move_cursor(row=table.row_count - 1)
            await pilot.pause()
        assert layouts[0] == before and table.layouts_skipped > skipped
        assert table.size.height == 8 and table.virtual_size.height == 41
        assert table.vertical_scrollbar.window_virtual_size == 41  # the scrollbar knows the new length
        await pilot.pause(0.2)
        assert "row 39" in app.export_screenshot().replace("&#160;", " ")  # the newest row is drawn


async def test_a_hidden_tables_rows_show_when_its_tab_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    layouts = count_layouts(monkeypatch)
    app = Tables()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one("#hidden", SteadyTable)
        await pilot.pause()
        before = layouts[0]
        for n in range(5):
            table.add_row(f"late {n}")
            await pilot.pause()
        assert layouts[0] == before and table.layouts_skipped >= 5
        app.query_one(TabbedContent).active = "two"
        await pilot.pause(0.2)
        assert table.size.height == 6
        assert "late 4" in app.export_screenshot().replace("&#160;", " ")


async def test_the_hidden_processes_tab_is_drawn_when_shown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    updates: list[str] = []
    original = Static.update

    def counted(self: Static, *args: object, **kwargs: object) -> None:
        updates.append(str(self.id))
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Static, "update", counted)
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(1.0)  # several redraws while the tab is hidden
        panel = app.query_one(ProcessesPanel)
        assert "processes-text" not in updates and panel._shown is None
        await pilot.press("o")
        await wait_until(pilot, lambda: panel._shown is not None)
        assert updates.count("processes-text") == 1 and "GPU" in panel.plain
        await pilot.pause(0.6)  # the same sample again: not drawn again
        assert updates.count("processes-text") == 1


class Running:
    def close(self) -> None:
        pass


async def test_the_idle_app_redraws_at_half_the_live_rate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=(120, 40)):
        drawn: list[int] = []
        monkeypatch.setattr(app, "refresh_live", lambda: drawn.append(1))
        for _ in range(4 * IDLE_REDRAW_EVERY):
            app._refresh_live_tick()
        assert len(drawn) == 4  # no run: every second tick
        drawn.clear()
        app.link = Running()  # type: ignore[assignment]
        for _ in range(4):
            app._refresh_live_tick()
        app.link = None
        assert len(drawn) == 4  # a live run: every tick


class PacedSampler(FakeSampler):
    """A fake sampler that records the pace the app asks of it."""

    def __init__(self) -> None:
        super().__init__(h200_samples())
        self.interval = 0.1
        self.paces: list[float] = []

    def pace(self, interval: float) -> None:
        self.paces.append(interval)


async def test_the_idle_app_slows_its_own_sampler_and_a_live_run_speeds_it_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sampler = PacedSampler()
    app = RigcheckApp(Store(tmp_path / "s.db"), sampler, device="cpu")
    async with app.run_test(size=(120, 40)):
        monkeypatch.setattr(app, "refresh_live", lambda: None)
        app._refresh_live_tick()
        assert sampler.paces[-1] == IDLE_SAMPLE_S  # no run: twice a second
        app.link = Running()  # type: ignore[assignment]
        app._refresh_live_tick()
        app.link = None
        assert sampler.paces[-1] == 0.1  # a live run: the rate it was started at


async def test_a_new_row_renders_alone_unless_a_column_widens(monkeypatch: pytest.MonkeyPatch) -> None:
    computed: list[int] = []
    original = SteadyTable._compute_row_renderables

    def counted(self: SteadyTable, row_index: int) -> object:
        computed.append(row_index)
        return original(self, row_index)

    monkeypatch.setattr(SteadyTable, "_compute_row_renderables", counted)
    app = Tables()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one("#shown", SteadyTable)
        for n in range(12):  # more than it shows: it scrolls, its box stays
            table.add_row(f"row {n}")
        table.move_cursor(row=11)
        await pilot.pause(0.3)
        computed.clear()
        table.add_row("row 12")
        table.move_cursor(row=12)
        await pilot.pause(0.3)
        assert set(computed) == {12}  # the rows before it kept their rendering
        computed.clear()
        table.add_row("a much wider row")
        table.move_cursor(row=13)
        await pilot.pause(0.3)
        assert {9, 10, 11, 12, 13} <= set(computed)  # the column widened: every row shown renders anew
        shot = app.export_screenshot().replace("&#160;", " ")
        assert "a much wider row" in shot and "row 12" in shot


async def test_a_changed_cell_renders_its_row_alone_and_is_drawn(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[object] = []
    original = SteadyTable._render_cell

    def counted(self: SteadyTable, row_index: int, column_index: int, *args: object, **kwargs: object) -> object:
        rendered.append(row_index)
        return original(self, row_index, column_index, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SteadyTable, "_render_cell", counted)
    app = Tables()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one("#shown", SteadyTable)
        for n in range(4):
            table.add_row(f"row {n}", key=f"k{n}")
        await pilot.pause(0.3)
        rendered.clear()
        table.update_cell("k2", "name", "new 2")
        await pilot.pause(0.3)
        assert rendered and set(rendered) == {2}  # the other rows kept their rendering
        shot = app.export_screenshot().replace("&#160;", " ")
        assert "new 2" in shot and "row 2" not in shot and "row 3" in shot
        rendered.clear()
        table.update_cell("k2", "name", "new 2")  # the same value again: the row is drawn the same
        await pilot.pause(0.3)
        assert set(rendered) <= {2}
