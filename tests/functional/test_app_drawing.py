"""What keeps the app's drawing cheap draws the same: the plots straight from plotext's matrix, the Running
table's fixed box, a row cursor that moves, a batch of figures that scrolls the table in one render."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from rich.text import Text
from rigcheck.engine.events import Measurement
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.widgets.bench_panel import BenchPanel
from rigcheck.tui.widgets.burn_plot import BurnPlot
from rigcheck.tui.widgets.quick_plot import MatrixVisual, QuickPlot, matrix_runs
from rigcheck.tui.widgets.steady_table import SteadyTable
from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.selection import SELECT_ALL
from textual.strip import Strip
from textual.visual import Visual, visualize
from textual.widgets import DataTable, TabbedContent, TabPane


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


def drawn_both_ways(plot: QuickPlot) -> tuple[list[list[object]], list[list[object]]]:
    """The plot's strips as PlotextPlot draws them (plotext's ANSI text through rich) and as QuickPlot does."""
    width, height = plot.size
    figure = plot.plt
    figure.plotsize(width, height)
    figure._set_size(width, height)
    figure.theme(plot._get_plotext_theme_name(plot.app.theme))
    through_text = visualize(plot, Text.from_ansi(figure.build()))
    figure._set_sizes()
    figure._build_matrix()
    straight = MatrixVisual(matrix_runs(figure.monitor.matrix))
    return (
        [list(s) for s in Visual.to_strips(plot, through_text, width, height, plot.visual_style)],
        [list(s) for s in Visual.to_strips(plot, straight, width, height, plot.visual_style)],
    )


def burn(value: float, interval: int) -> Measurement:
    params = {"elapsed_s": 10.0 * interval, "interval": interval}
    return Measurement("burn", "interval", value, "TFLOP/s", device="cuda:0", params=params)


@pytest.mark.parametrize("ascii_only", [False, True])
async def test_plots_drawn_from_the_matrix_are_the_same_strips(tmp_path: Path, ascii_only: bool) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cpu", ascii_only=ascii_only)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        for theme in ("rigcheck-dark", "rigcheck-light", "rigcheck-contrast"):
            app.theme = theme
            await pilot.pause(0.1)
            through_text, straight = drawn_both_ways(app.query_one("#clocks-plot", QuickPlot))
            assert len(straight) > 5 and any("GPU 0" in s.text for line in straight for s in line)  # type: ignore[attr-defined]
            assert straight == through_text  # characters, colours, and the offsets text selection uses
        app.action_show_tab("tab-burn")
        plot = app.query_one(BurnPlot)
        for interval, value in enumerate([50.0, 52.0, 49.0, 51.0]):
            plot.add(burn(value, interval))
        await pilot.pause(0.3)
        through_text, straight = drawn_both_ways(plot)
        assert straight == through_text


async def test_a_plot_with_text_selected_in_it_is_drawn_the_usual_way(tmp_path: Path) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        plot = app.query_one("#clocks-plot", QuickPlot)
        visual = plot.render()
        assert isinstance(visual, MatrixVisual)
        drawn: list[int] = []
        original = visual.text

        def text() -> object:
            drawn.append(1)
            return original()

        visual.text = text  # type: ignore[method-assign]
        width, height = plot.size
        Visual.to_strips(plot, visual, width, height, plot.visual_style)
        assert drawn == []  # no selection: runs of one colour
        plot.screen.selections = {plot: SELECT_ALL}
        Visual.to_strips(plot, visual, width, height, plot.visual_style)
        assert drawn == [1]  # a selection is drawn through Content, which knows how to show it


class Tables(App[None]):
    """A table in a fixed box, with more rows than it shows."""

    CSS = "SteadyTable { height: 1fr; }"

    def compose(self) -> ComposeResult:
        with TabbedContent(initial="one"), TabPane("one", id="one"):
            yield SteadyTable(id="table", cursor_type="row")

    def on_mount(self) -> None:
        table = self.query_one(SteadyTable)
        table.add_column("name", key="name")
        for n in range(30):
            table.add_row(f"row {n}")


async def test_a_moved_row_cursor_renders_only_the_rows_it_leaves_and_reaches(monkeypatch: pytest.MonkeyPatch) -> None:
    rendered: list[int] = []
    original = SteadyTable._render_cell

    def counted(self: SteadyTable, row_index: int, column_index: int, *args: object, **kwargs: object) -> object:
        rendered.append(row_index)
        return original(self, row_index, column_index, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(SteadyTable, "_render_cell", counted)
    app = Tables()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(SteadyTable)
        shown = table.size.height - 1  # under the header
        table.refresh()  # every row shown rendered as it is now (its widths were settled after the first)
        await pilot.pause(0.3)
        table.move_cursor(row=shown - 1)  # the last row shown
        await pilot.pause(0.3)
        assert table.scroll_y == 0
        rendered.clear()
        table.move_cursor(row=shown)  # the next one: the table scrolls a line
        await pilot.pause(0.3)
        assert table.scroll_y == 1
        assert rendered and set(rendered) <= {shown - 1, shown}  # a DataTable renders every row shown again
        lines = app.export_screenshot().replace("&#160;", " ")
        assert f"row {shown}" in lines and "row 1 " in lines and "row 0 " not in lines


async def test_a_new_height_alone_keeps_the_rendered_cells() -> None:
    app = Tables()
    async with app.run_test(size=(60, 20)) as pilot:
        table = app.query_one(SteadyTable)
        await pilot.pause(0.2)
        count = table._update_count
        await pilot.resize_terminal(60, 30)
        await pilot.pause(0.3)
        assert table._update_count == count  # the same width: the rows render as before
        await pilot.resize_terminal(70, 30)
        await pilot.pause(0.3)
        assert table._update_count > count  # a new width: they render anew


def figure(n: int) -> Measurement:
    return Measurement("ok", f"figure {n}", float(n), "units", device="cpu")


async def settled(pilot, layouts: list[int]) -> None:  # type: ignore[no-untyped-def]
    """Wait until the app's start-up layouts are over (a loaded machine spreads them over seconds)."""
    for _ in range(100):
        seen = layouts[0]
        await pilot.pause(0.3)
        if layouts[0] == seen:
            return
    raise AssertionError("the app kept laying out its screen")


def count_layouts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    layouts = [0]
    original = Screen._refresh_layout

    def counted(self: Screen, *args: object, **kwargs: object) -> None:
        layouts[0] += 1
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Screen, "_refresh_layout", counted)
    return layouts


async def test_a_batch_of_figures_is_drawn_in_one_render_without_a_layout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    layouts = count_layouts(monkeypatch)
    drawn: list[int] = []
    original = SteadyTable._render_line

    def counted(self: SteadyTable, y: int, *args: object) -> object:
        if isinstance(self, BenchPanel):
            drawn.append(y)
        return original(self, y, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(SteadyTable, "_render_line", counted)
    passes: list[int] = []  # lines drawn in each of the table's renders
    render_lines = BenchPanel.render_lines

    def counted_pass(self: BenchPanel, crop: object) -> object:
        before = len(drawn)
        lines = render_lines(self, crop)  # type: ignore[arg-type]
        if len(drawn) > before:
            passes.append(len(drawn) - before)
        return lines

    monkeypatch.setattr(BenchPanel, "render_lines", counted_pass)
    highlighted: list[int] = []
    monkeypatch.setattr(BenchPanel, "_highlight_row", lambda self, row: highlighted.append(row))
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        bench = app.query_one(BenchPanel)
        await settled(pilot, layouts)
        height = bench.size.height
        before = layouts[0]
        bench.add_measurements([figure(n) for n in range(3)])  # fewer than it shows: its box stays
        await pilot.pause(0.3)
        assert layouts[0] == before and bench.size.height == height and bench.cursor_row == 2
        highlighted.clear()
        bench.add_measurements([figure(n) for n in range(3, 40)])  # more than it shows: a scrollbar comes
        await pilot.pause(0.3)
        passes.clear()
        before = layouts[0]
        bench.add_measurements([figure(n) for n in range(40, 45)])
        assert bench.virtual_size.height == 46  # sized at once, not when idle: the cursor's scroll finds its row
        await pilot.pause(0.3)
        assert layouts[0] == before
        assert bench.cursor_row == 44 and bench.scroll_y == bench.max_scroll_y > 0
        assert len(passes) == 1  # drawn once, scrolled already: a DataTable draws, then scrolls and draws again
        assert highlighted == [39, 44]  # the cursor moved once a batch, not once a figure
        assert "figure 44" in app.export_screenshot().replace("&#160;", " ")


class TwoTables(App[None]):
    """A table whose height follows its rows beside the Running table's fixed box, with the same rows."""

    CSS = "Horizontal { height: 1fr; } DataTable, BenchPanel { width: 1fr; }"
    AUTO_FOCUS = None

    def compose(self) -> ComposeResult:
        from textual.containers import Horizontal

        with Horizontal():
            yield DataTable(id="auto", cursor_type="row")
            yield BenchPanel(id="bench")

    def on_mount(self) -> None:
        table = self.query_one("#auto", DataTable)
        for name in ("figure", "device", "value", "±", "trust"):
            table.add_column(name, key=name)


async def test_the_running_tables_fixed_box_looks_like_a_table_that_ends_at_its_rows() -> None:
    app = TwoTables()
    async with app.run_test(size=(100, 16)) as pilot:
        bench = app.query_one(BenchPanel)
        await pilot.pause(0.2)
        bench.add_measurements([figure(n) for n in range(3)])
        for n in range(3):
            row = list(bench.get_row_at(n))
            app.query_one("#auto", DataTable).add_row(*row)
        app.query_one("#auto", DataTable).move_cursor(row=2)
        await pilot.pause(0.3)
        assert bench.size.height == 16 and app.query_one("#auto", DataTable).size.height == 4
        strips = app.screen._compositor.render_strips()
        assert cells(strips, 0, 50) == cells(strips, 50, 100)  # the rows, and the blank below them


def cells(strips: list[Strip], start: int, end: int) -> list[list[tuple[str, object, object]]]:
    """What each cell shows: its character, its colour where it has a character, its background."""
    shown = []
    for strip in strips:
        line = []
        for segment in strip.crop(start, end):
            style = segment.style
            for char in segment.text:
                colour = style.color if style and char != " " else None
                line.append((char, colour, style.bgcolor if style else None))
        shown.append(line)
    return shown
