"""One result in full (a figure's trust, reasons, notes and conditions, or a verdict's numbers), over the app."""

from __future__ import annotations

from rich.text import Text
from rigcheck.engine.report.rows import Row
from rigcheck.tui.widgets.row_words import detail_words
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static


class DetailScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,enter,q", "app.pop_screen", "Back")]

    def __init__(self, row: Row) -> None:
        super().__init__()
        self.row = row

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="detail-box"):
            yield Static(Text(detail_words(self.row)), id="detail-text")
        yield Footer()

    def on_mount(self) -> None:
        box = self.query_one("#detail-box")
        box.border_title = f"{self.row['stage']}/{self.row['name']}"
