"""Past runs from the store; open one, or mark two and compare them figure by figure."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from rigcheck.engine.report.fleet_view import fleet_label
from rigcheck.engine.store import Store
from rigcheck.engine.store.history import real_runs
from rigcheck.tui.screens.compare import CompareScreen, compare_rows
from rigcheck.tui.screens.fleet import FleetScreen
from rigcheck.tui.widgets.styling import status_text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

MARK = "*"
__all__ = ["CompareScreen", "HistoryScreen", "compare_rows"]


class RunsTable(DataTable[Any]):
    # Enter is the table's own (a RowSelected after any arrow keys before it, shown in the footer): a
    # screen's priority binding would run ahead of arrows still queued for the table, as keys arrive
    # in bursts over SSH, and open the wrong run.
    BINDINGS = [Binding("enter", "select_cursor", "Open")]


class HistoryScreen(Screen[int | None]):
    BINDINGS = [
        Binding("escape,q", "close", "Back"),
        Binding("space", "mark", "Mark"),
        Binding("c", "compare", "Compare marked"),
    ]

    def __init__(self, store: Store) -> None:
        super().__init__()
        self.store = store
        self.marked: list[int] = []
        self.run_ids: list[int] = []
        self.fleet_runs: set[int] = set()

    def compose(self) -> ComposeResult:
        yield Static("History: enter opens a run, space marks two, c compares them", classes="screen-title")
        yield RunsTable(id="history-table", cursor_type="row")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("", key="mark", width=len(MARK))  # a fixed width: update_cell does not widen
        for name in ("run", "started", "status", "worst", "device", "profile", "stages", "fingerprint"):
            table.add_column(name, key=name)
        runs = real_runs(self.store, 200)  # the gate's checks are a health timeline: `history --checks`
        worst = self.store.worst_statuses([run["id"] for run in runs])
        for run in runs:
            self.run_ids.append(run["id"])
            if run.get("fleet"):
                self.fleet_runs.add(run["id"])
            table.add_row(
                "",
                str(run["id"]),
                dt.datetime.fromtimestamp(run["started"]).strftime("%Y-%m-%d %H:%M"),
                "LIVE" if self.store.is_live(run) else run["status"],  # an engine is carrying it now
                status_text(self.app, worst[run["id"]]) if run["id"] in worst else "-",
                fleet_label(run),  # a fleet run: how many hosts, how many lost
                run["profile"] or "",
                ", ".join(json.loads(run["stages"] or "[]")),
                run["fingerprint"] or "",
                key=str(run["id"]),
            )

    def _current(self) -> int | None:
        table = self.query_one(DataTable)
        return self.run_ids[table.cursor_row] if self.run_ids else None

    def action_close(self) -> None:
        self.dismiss(None)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a row: the table takes the key for itself and says so with this message."""
        event.stop()
        self._open(self.run_ids[event.cursor_row] if 0 <= event.cursor_row < len(self.run_ids) else None)

    def _open(self, run_id: int | None) -> None:
        """A fleet run opens on its hosts x GPUs grid (whose `r` goes on to the usual Results); others at once."""
        if run_id is None or run_id not in self.fleet_runs:
            self.dismiss(run_id)
            return

        def chosen(result: int | None) -> None:
            if result is not None:
                self.dismiss(result)

        self.app.push_screen(FleetScreen(self.store, run_id), chosen)

    def action_mark(self) -> None:
        run_id = self._current()
        if run_id is None:
            return
        if run_id in self.marked:
            self.marked.remove(run_id)
        else:
            self.marked = [*self.marked[-1:], run_id]
        table = self.query_one(DataTable)
        for other in self.run_ids:
            table.update_cell(str(other), "mark", MARK if other in self.marked else "")

    def action_compare(self) -> None:
        if len(self.marked) != 2:
            self.notify("mark two runs with space first")
            return
        first, second = sorted(self.marked)
        self.app.push_screen(CompareScreen(self.store, first, second))
