"""The Log panel: stage log lines and crash reports, newest at the bottom."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import RichLog


class LogPanel(RichLog):
    def __init__(self, **kwargs: object) -> None:
        super().__init__(max_lines=2000, wrap=True, markup=False, highlight=False, **kwargs)  # type: ignore[arg-type]
        self.texts: list[str] = []  # what was written, readable even before the tab is first shown

    def line(self, text: str, style: str = "") -> None:
        self.texts = [*self.texts[-1999:], text]
        self.write(Text(text, style=style))
