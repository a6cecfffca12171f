"""A few lines of words under a table that change as its cursor moves: as tall as its words, repainting only itself.

Its height follows the number of lines its words wrap to (up to what its parent leaves it); a new text
of the same height repaints the line alone, without a new layout of the screen (as Static.update would).
"""

from __future__ import annotations

from rich.text import Text
from textual.events import Resize
from textual.widget import Widget


class WhyLine(Widget):
    DEFAULT_CSS = """
    WhyLine {
        height: 1;
        overflow: hidden;
    }
    """

    def __init__(self, text: str = "", keep_below: int = 0, min_lines: int = 1, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._text = Text(text)
        self.min_lines = min_lines  # room kept for the usual one or two lines: no new layout as they change
        self.styles.height = min_lines  # from the start: the first drawing lays out nothing anew
        self.keep_below = keep_below  # rows of the parent left to what sits beside it (a table's header and rows)

    @property
    def plain(self) -> str:
        return self._text.plain

    def set(self, text: str | Text) -> None:
        new = text if isinstance(text, Text) else Text(text)
        if new.plain == self._text.plain and new.style == self._text.style:
            return
        self._text = new
        if not self._fit():
            self.refresh()

    def lines_needed(self, width: int) -> int:
        if width <= 0:
            return 1
        return max(1, len(self._text.wrap(self.app.console, width)))

    def _fit(self) -> bool:
        """Give the widget the height its words need; True when that changed it (a layout follows)."""
        width = self.content_region.width or self.size.width
        room = self.parent.size.height - self.keep_below if self.parent is not None else 0
        wanted = self.lines_needed(width)
        height = max(self.min_lines, min(wanted, room) if room > 0 else wanted)
        if self.styles.height is not None and self.styles.height.value == height:
            return False
        self.styles.height = height
        return True

    def on_resize(self, event: Resize) -> None:
        self._fit()

    def render(self) -> Text:
        return self._text
