"""The Results panel: every verdict and figure of one run; the highlighted row's detail shows below it."""

from __future__ import annotations

from rich.text import Text
from rigcheck.engine.report.rows import Row, meaning, status_of, value_text
from rigcheck.tui.screens.detail import DetailScreen
from rigcheck.tui.widgets.row_words import detail_words
from rigcheck.tui.widgets.steady_table import SteadyTable
from rigcheck.tui.widgets.styling import status_text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

# Widths are left to the table (it widens a column to its longest cell), so no unit or status is cut.
COLUMNS = ("stage", "name", "device", "status", "value", "meaning")


class ResultsPanel(Vertical):
    def compose(self) -> ComposeResult:
        table: SteadyTable[Text | str] = SteadyTable(id="results-table", cursor_type="row")
        yield table
        yield Static(id="result-detail")

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for name in COLUMNS:
            table.add_column(name, key=name)
        self.rows: list[Row] = []
        self.query_one("#result-detail", Static).border_title = "highlighted row (enter: all of it)"

    def clear(self) -> None:
        self.query_one(DataTable).clear()
        self.rows = []
        self.query_one("#result-detail", Static).update("")

    def add(self, row: Row) -> None:
        self.rows.append(row)
        self.query_one(DataTable).add_row(
            row["stage"],
            row["name"],
            row.get("device") or "",
            status_text(self.app, status_of(row)),
            Text(value_text(row), justify="right"),
            meaning(row),
        )
        if len(self.rows) == 1:
            self._show_detail(0)  # the cursor starts on the first row without saying so

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.cursor_row)

    def _show_detail(self, index: int) -> None:
        if 0 <= index < len(self.rows):
            self.query_one("#result-detail", Static).update(Text(detail_words(self.rows[index])))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        if 0 <= event.cursor_row < len(self.rows):
            self.app.push_screen(DetailScreen(self.rows[event.cursor_row]))
