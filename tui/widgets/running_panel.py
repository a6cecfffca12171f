"""The Running tab: the run's figures as they arrive, and under them why the highlighted one has its trust.

The reason a figure is SUSPECT is rigcheck's main answer, so it is never cut: the line under the table
grows to the sentences it needs (enter still shows the figure in full).
"""

from __future__ import annotations

from rigcheck.tui.glyphs import UNICODE, Glyphs
from rigcheck.tui.widgets.bench_panel import BenchPanel
from rigcheck.tui.widgets.row_words import why_text
from rigcheck.tui.widgets.why_line import WhyLine
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable

EMPTY = "Figures show above as they arrive; here, why the highlighted one has its trust (enter: all of it)."
KEEP_ROWS = 3  # the table's header and two rows stay above the words, however long they are


class RunningPanel(Vertical):
    DEFAULT_CSS = """
    RunningPanel {
        height: 1fr;
    }
    RunningPanel > #bench-why {
        color: $text-muted;
        background: $boost;
    }
    """

    def __init__(self, glyphs: Glyphs = UNICODE, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.glyphs = glyphs

    def compose(self) -> ComposeResult:
        yield BenchPanel(self.glyphs, id="bench")
        yield WhyLine(EMPTY, keep_below=KEEP_ROWS, min_lines=2, id="bench-why")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        bench = self.query_one(BenchPanel)
        if event.data_table is bench:
            self.show_why(event.cursor_row)

    def show_why(self, index: int) -> None:
        rows = self.query_one(BenchPanel).rows_shown
        why = self.query_one("#bench-why", WhyLine)
        why.set(why_text(rows[index]) if 0 <= index < len(rows) else EMPTY)

    def clear(self) -> None:
        self.query_one(BenchPanel).clear_figures()
        self.show_why(-1)
