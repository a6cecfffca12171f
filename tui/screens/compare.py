"""Two runs side by side, figure by figure, fitted to the terminal's width: no column runs off the screen.

Each side shows its value and trust; the line under the table says everything about the highlighted figure
(both spreads, why a side is not trusted, why there is no ratio). At 80 columns the second run's column
used to sit about forty presses of the right arrow away.
"""

from __future__ import annotations

from rich.text import Text
from rigcheck.engine.report.compare import Row, Side, compare
from rigcheck.engine.report.rows import spread_text
from rigcheck.engine.store import Store
from rigcheck.tui.widgets.why_line import WhyLine
from textual.app import ComposeResult
from textual.binding import Binding
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

RATIO_WIDTH = 7  # `1.000 ~`
PADDING = 2  # a DataTable cell's padding, both sides together
FIGURE_MIN = 16


def compare_rows(first: dict, second: dict) -> list[tuple[str, str, str, str]]:  # type: ignore[type-arg]
    """(figure, ratio, first, second) in words, as `rigcheck compare` says them: for tests and the CLI's sake."""
    return [
        (row.figure, row.ratio_text(), row.first.text() if row.first else "", row.second.text() if row.second else "")
        for row in compare(first, second)
    ]


def side_cell(side: Side | None) -> str:
    """`131.9 SUSPECT`: the value and its trust (the unit has its own column, the spread is in the line below)."""
    if side is None:
        return "-"
    return f"{side.value:,.4g} {side.trust}"


def split_figure(label: str) -> tuple[str, str]:
    """`matmul fp32 4096 [cuda:1]` -> (`matmul fp32 4096`, `cuda:1`)."""
    name, bracket, device = label.rpartition(" [")
    return (name, device.removesuffix("]")) if bracket else (label, "")


def unit_of(row: Row) -> str:
    units = {side.unit for side in row.sides if side is not None}
    return " / ".join(sorted(units))


def ratio_cell(row: Row) -> str:
    if row.ratio is None:
        return "-"
    return f"{row.ratio:.3f}" + (" ~" if row.note == "within the spread" else "")


def side_words(run_id: int, side: Side | None) -> str:
    if side is None:
        return f"run {run_id} did not measure it"
    share = spread_text(side.value, side.spread)
    said = f"run {run_id} {side.value:,.4g} {side.unit}" + (f" ±{share}" if share else "") + f" {side.trust}"
    if side.reasons:
        said += f" ({'; '.join(side.reasons)})"
    return said + (", unverified" if side.verified is False else "")


def row_words(row: Row, first: int, second: int) -> str:
    """Everything about one compared figure, for the line under the table."""
    ratio = f"ratio {row.ratio:.3f}" + (f" ({row.note})" if row.note else "") if row.ratio is not None else row.note
    return f"{row.figure}: {side_words(first, row.first)}; {side_words(second, row.second)}; {ratio}."


def fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def fit_names(names: list[str], width: int) -> list[str]:
    """Each figure's name cut to `width`, at its end unless that leaves only the start of another name in the
    table (`matmul fp32 1024 (numpy)` beside `matmul fp32 1024`): then its end is kept (`…p32 1024 (numpy)`)."""
    shown = []
    for name in names:
        if len(name) <= width:
            shown.append(name)
            continue
        head = name[: max(0, width - 1)]
        seen = head.rstrip()  # what the cut shows, before its ellipsis
        twin = any(other != name and (other.startswith(seen) or seen.startswith(other)) for other in names)
        shown.append("…" + name[len(name) - max(0, width - 1) :] if twin else head + "…")
    return shown


class CompareScreen(Screen[None]):
    BINDINGS = [Binding("escape,q", "app.pop_screen", "Back")]

    def __init__(self, store: Store, first: int, second: int) -> None:
        super().__init__()
        self.store, self.first, self.second = store, first, second
        self.rows: list[Row] = []

    def compose(self) -> ComposeResult:
        yield Static(
            f"run {self.first} against run {self.second} (ratio = second / first; ~ within the spread)",
            classes="screen-title",
        )
        yield DataTable(id="compare-table", cursor_type="row")
        yield WhyLine(keep_below=3, min_lines=2, id="compare-why")
        yield Footer()

    def on_mount(self) -> None:
        first, second = self.store.report(self.first), self.store.report(self.second)
        self.rows = compare(first, second) if first and second else []
        self._fill(self.app.size.width)

    def on_resize(self, event: Resize) -> None:
        if self.rows:
            self._fill(event.size.width)

    def _fill(self, width: int) -> None:
        """Columns sized so that all four fit `width`: the sides take what they need, up to a share, and
        the figure's name the rest (cut with an ellipsis; the line below has it whole)."""
        table = self.query_one(DataTable)
        cursor = table.cursor_row
        table.clear(columns=True)
        firsts = [side_cell(r.first) for r in self.rows]
        seconds = [side_cell(r.second) for r in self.rows]
        names = [split_figure(r.figure) for r in self.rows]
        units = [unit_of(r) for r in self.rows]
        device = max([len("device"), *(len(d) for _, d in names)])
        unit = min(max([len("unit"), *map(len, units)]), 9)
        room = max(0, width - 2 - 6 * PADDING - RATIO_WIDTH - device - unit)  # 2: the vertical scrollbar
        side = min(max([len(f"run {self.second}"), *map(len, firsts + seconds)]), max(8, (room - FIGURE_MIN) // 2))
        figure = min(max([len("figure"), *(len(n) for n, _ in names)]), max(FIGURE_MIN, room - 2 * side))
        for name, size in (("figure", figure), ("device", device), (f"run {self.first}", side)):
            table.add_column(name, width=size)
        for name, size in ((f"run {self.second}", side), ("unit", unit), ("ratio", RATIO_WIDTH)):
            table.add_column(name, width=size)
        shown_names = fit_names([n for n, _ in names], figure)
        for row, shown, (_, where), left, right, shown_unit in zip(
            self.rows, shown_names, names, firsts, seconds, units, strict=True
        ):
            # Text, not str: a str cell is read as markup, and a `[cuda:0]` would vanish as a style tag
            table.add_row(
                Text(shown),
                Text(where),
                Text(fit(left, side)),
                Text(fit(right, side)),
                Text(fit(shown_unit, unit)),
                Text(ratio_cell(row), justify="right"),
            )
        if self.rows:
            table.move_cursor(row=min(cursor, len(self.rows) - 1))
            self._show(table.cursor_row)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show(event.cursor_row)

    def _show(self, index: int) -> None:
        if 0 <= index < len(self.rows):
            self.query_one("#compare-why", WhyLine).set(row_words(self.rows[index], self.first, self.second))
