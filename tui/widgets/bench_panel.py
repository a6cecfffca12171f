"""The Running-benchmark table: each figure of the current run as it arrives, with its spread and trust.

Why a figure has its trust is not a column (it would be cut): the line under the table says it in full
(tui/widgets/running_panel.py).
"""

from __future__ import annotations

from rich.text import Text
from rigcheck.engine.events import Measurement
from rigcheck.engine.report.rows import Row, measurement_row, spread_text, trust_of, value_text
from rigcheck.tui.glyphs import UNICODE, Glyphs
from rigcheck.tui.screens.detail import DetailScreen
from rigcheck.tui.widgets.steady_table import SteadyTable
from rigcheck.tui.widgets.styling import status_text
from textual.widgets import DataTable


class BenchPanel(SteadyTable[Text | str]):
    # A fixed box from the first figure on: a table whose height follows its rows lays out the whole screen
    # at every new row. Below its rows it draws its parent's background, so it looks as if it ended there.
    DEFAULT_CSS = """
    BenchPanel {
        height: 1fr;
    }
    """
    fills_below = True

    def __init__(self, glyphs: Glyphs = UNICODE, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.glyphs = glyphs
        self.rows_shown: list[Row] = []

    def on_mount(self) -> None:
        self.cursor_type = "row"
        for name in ("figure", "device", "value", self.glyphs.plus_minus, "trust"):
            self.add_column(name, key=name)

    def clear_figures(self) -> None:
        self.clear()
        self.rows_shown = []

    def add_measurements(self, measurements: list[Measurement]) -> None:
        """New figures at the end; a cursor on the last row follows, once, to the newest, and the table scrolls
        to it at once. A cursor moved up to read an earlier figure stays where it was put."""
        following = self.cursor_row >= self.row_count - 1
        for measurement in measurements:
            self._add_row_of(measurement)
        if measurements and following:
            self.measure_new_rows()
            self.move_cursor(row=self.row_count - 1)

    def add_measurement(self, measurement: Measurement) -> None:
        self.add_measurements([measurement])

    def _add_row_of(self, measurement: Measurement) -> None:
        row = measurement_row(measurement)
        self.rows_shown.append(row)
        spread = spread_text(measurement.value, measurement.spread)
        if spread.startswith("unstable"):  # the cell stays narrow at 80 columns; the why line below says how much
            spread = "unstable"
        self.add_row(
            measurement.name,
            measurement.device,
            Text(value_text(row), justify="right"),
            Text(spread, justify="right"),
            status_text(self.app, trust_of(row)),
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self.rows_shown):
            self.app.push_screen(DetailScreen(self.rows_shown[event.cursor_row]))
