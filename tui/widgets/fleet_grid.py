"""The fleet grid: one row per host in rank order, one column per GPU; the host column stays put while it scrolls."""

from __future__ import annotations

from rich.text import Text
from rigcheck.engine.report.fleet_view import STATE_CLASS, Cell, HostLine, grid_devices
from rigcheck.tui.widgets.styling import CLASS_VARIABLE, STATUS_VARIABLE
from textual.binding import Binding
from textual.coordinate import Coordinate
from textual.widgets import DataTable

HOST = "host"
FILLER = "filler"
HOST_WIDTH = 20  # a longer name is cut here (the detail line has it whole)


class FleetGrid(DataTable[Text]):
    """Cells of `engine.fleet_view`: the worst verdict and key figure on line 1, the figure's trust on line 2."""

    # Enter is the table's own (a CellSelected after any arrow keys before it): a screen's priority
    # binding would run ahead of arrows still queued for the table, as keys arrive in bursts over SSH.
    BINDINGS = [Binding("enter", "select_cursor", "Open host")]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="cell", fixed_columns=1, zebra_stripes=True, **kwargs)  # type: ignore[arg-type]
        self.lines: list[HostLine] = []
        self.devices: list[str] = []
        self._theme: dict[str, str] = {}  # the theme's variables, read once a draw: each read builds the design

    def show(self, lines: list[HostLine]) -> None:
        self._theme = self.app.get_css_variables()  # 1,024 hosts x 8 GPUs read it 16,000 times otherwise
        self.clear(columns=True)
        self.lines, self.devices = lines, grid_devices(lines)
        self.add_column(HOST, key=HOST)
        for device in self.devices:
            self.add_column(device, key=device)
        rows = []
        for line in lines:
            cells = {cell.device: cell for cell in line.cells}
            rows.append([self._cell(cells.get(device), line) for device in self.devices])
        widest = max((cell.cell_len for row in rows for cell in row), default=0)
        # Room to scroll a whole column past the right end, so scrolling can stop on a column's edge.
        self.add_column("", key=FILLER, width=max(widest, *map(len, self.devices), 1))
        for index, (line, row) in enumerate(zip(lines, rows, strict=True)):
            self.add_row(self._host_cell(line), *row, Text(""), height=2, key=str(index))

    def _clamp_cursor_coordinate(self, coordinate: Coordinate) -> Coordinate:
        """The cursor never lands on the filler column."""
        row, column = super()._clamp_cursor_coordinate(coordinate)
        return Coordinate(row, min(column, len(self.devices)))

    def at(self, row: int, column: int) -> tuple[HostLine, Cell | None] | None:
        """The host and the cell (None on the host column or a device the host lacks) at a position."""
        if not 0 <= row < len(self.lines):
            return None
        line = self.lines[row]
        device = self.devices[column - 1] if 1 <= column <= len(self.devices) else None
        return line, next((cell for cell in line.cells if cell.device == device), None)

    def on_data_table_cell_highlighted(self, event: DataTable.CellHighlighted) -> None:
        self.call_after_refresh(self._snap_to_column)

    def _snap_to_column(self) -> None:
        """Scroll left and right by whole columns: the table scrolls just enough to show the cursor,
        which leaves the tail of a column peeking out beside the fixed host column, read as a figure."""
        widths = [column.get_render_width(self) for column in self.ordered_columns[1:]]
        edge = 0
        for width in widths:
            if edge >= self.scroll_x:
                break
            edge += width
        if edge != self.scroll_x:
            self.scroll_to(x=edge, animate=False)

    def _colour(self, kind: str) -> str:
        return self._theme.get(CLASS_VARIABLE[kind], "")

    def _status(self, status: str) -> Text:
        """styling.status_text, with the theme read once for the whole grid."""
        variable = STATUS_VARIABLE.get(status)
        colour = self._theme.get(variable, "") if variable else ""
        return Text(status, style=f"bold {colour}" if colour else ("bold" if variable else ""))

    def _host_cell(self, line: HostLine) -> Text:
        name = line.host if len(line.host) <= HOST_WIDTH else line.host[: HOST_WIDTH - 1] + "…"
        text = Text(name, style="bold")
        text.append("\n")
        kind = STATE_CLASS.get(line.state)
        if line.lost:  # a lost host stands out whatever its cells say
            text.append(" LOST ", style=f"bold reverse {self._colour('crash')}")
        elif line.state:
            text.append(line.state, style=self._colour(kind) if kind else "")
        if line.status:
            text.append(" ")
            text.append_text(self._status(line.status))
        return text

    def _cell(self, cell: Cell | None, line: HostLine) -> Text:
        if cell is None:
            return Text("")  # this host has fewer devices
        if cell.status is None and cell.figure is None:
            return Text("-" if not line.lost else "lost", style=self._colour("skip"))
        text = self._status(cell.status) if cell.status else Text("-")
        if cell.figure is not None:
            text.append(" " + cell.value_text())
        text.append("\n")
        if cell.figure is not None:
            text.append_text(self._status(cell.trust))
        return text
