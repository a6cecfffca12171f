"""A fleet run: the hosts x GPUs grid, and one host's results (the Results panel, filtered to that host)."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.report.fleet_view import KEY_RULE, HostLine, describe, fleet_cells, host_rows
from rigcheck.engine.store import Store
from rigcheck.tui.widgets.fleet_grid import FleetGrid
from rigcheck.tui.widgets.results_panel import ResultsPanel
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static


def fleet_title(report: dict[str, Any], lines: list[HostLine]) -> str:
    lost = sum(1 for line in lines if line.lost)
    fleet_id = (report.get("fleet") or {}).get("id") or ""
    hosts = f"{len(lines)} host{'s' if len(lines) != 1 else ''}" + (f", {lost} lost" if lost else "")
    return f"run {report['run']['id']}: fleet {fleet_id} of {hosts}; enter: one host, r: all hosts' results"


FOLLOW_EVERY_S = 1.0


class FleetScreen(Screen[int | None]):
    """Dismissed with the run's id to show all of its results in the main Results tab, or None."""

    BINDINGS = [
        Binding("escape,q", "close", "Back"),
        Binding("r", "all_results", "All results"),
    ]

    def __init__(self, store: Store, run_id: int) -> None:
        super().__init__()
        self.store, self.run_id = store, run_id
        self.report: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        yield Static(classes="screen-title", id="fleet-title")
        yield Static(f"cell: worst verdict, key figure, its trust. Key figure: {KEY_RULE}", id="fleet-legend")
        yield FleetGrid(id="fleet-grid")
        yield Static(id="fleet-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#fleet-detail", Static).border_title = "highlighted host or GPU"
        self.query_one(FleetGrid).focus()
        if not self._load():
            self.dismiss(None)
        elif self.report is not None and self.report["run"]["status"] == "running":
            self._follow = self.set_interval(FOLLOW_EVERY_S, self._refresh)  # follow it as the agents report

    def _load(self) -> bool:
        """Read the run and draw it, the cursor where it was; False when the run is not in the store."""
        report = self.store.report(self.run_id)
        if report is None:
            return False
        self.report = report
        grid = self.query_one(FleetGrid)
        where = grid.cursor_coordinate
        grid.show(fleet_cells(report))
        grid.move_cursor(row=where.row, column=where.column)
        self.query_one("#fleet-title", Static).update(fleet_title(report, grid.lines))
        self._describe(*grid.cursor_coordinate)
        return True

    def _refresh(self) -> None:
        if self._load() and self.report is not None and self.report["run"]["status"] != "running":
            self._follow.stop()

    def _describe(self, row: int, column: int) -> None:
        found = self.query_one(FleetGrid).at(row, column)
        if found is not None:
            self.query_one("#fleet-detail", Static).update(describe(*found))

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        self._describe(event.coordinate.row, event.coordinate.column)

    def on_data_table_cell_selected(self, event: DataTable.CellSelected) -> None:
        """Enter, or a click, on a cell opens its host."""
        event.stop()
        grid, row = self.query_one(FleetGrid), event.coordinate.row
        if self.report is not None and 0 <= row < len(grid.lines):
            self.app.push_screen(FleetHostScreen(self.report, grid.lines[row]))

    def action_all_results(self) -> None:
        self.dismiss(self.run_id)

    def action_close(self) -> None:
        self.dismiss(None)


class FleetHostScreen(Screen[None]):
    """The Results panel over one host's rows; its title names the host."""

    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back to the grid")]

    def __init__(self, report: dict[str, Any], line: HostLine) -> None:
        super().__init__()
        self.report, self.line = report, line

    def compose(self) -> ComposeResult:
        state = f" ({self.line.state})" if self.line.state else ""
        yield Static(
            f"run {self.report['run']['id']}, host {self.line.host}{state}: its verdicts and figures",
            classes="screen-title",
            id="host-title",
        )
        yield ResultsPanel(id="host-results")
        yield Footer()

    def on_mount(self) -> None:
        panel = self.query_one(ResultsPanel)
        for row in host_rows(self.report, self.line.host):
            panel.add(row)
        panel.query_one(DataTable).focus()

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The main screen's Processes panel follows its own Results rows, not these."""
        event.stop()
