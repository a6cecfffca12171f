"""Text that changes several times a second: repaints its own region only, and only when it changed.

Static.update() asks for a new layout of the whole screen each time, which at 4 Hz costs more than
everything else the idle app does.
"""

from __future__ import annotations

from rich.text import Text
from textual.widget import Widget


class LiveText(Widget):
    DEFAULT_CSS = """
    LiveText {
        height: auto;
    }
    """

    def __init__(self, text: str = "", **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._text = Text(text)

    def set(self, text: str | Text) -> None:
        new = text if isinstance(text, Text) else Text(text)
        if new.plain != self._text.plain:
            self._text = new
            self.refresh()

    @property
    def plain(self) -> str:
        return self._text.plain

    def render(self) -> Text:
        return self._text
