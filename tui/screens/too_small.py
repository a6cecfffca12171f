"""Shown instead of a broken layout while the terminal is smaller than the 80x24 the app is laid out for."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.events import Resize
from textual.screen import Screen
from textual.widgets import Static

MIN_WIDTH, MIN_HEIGHT = 80, 24


def too_small(width: int, height: int) -> bool:
    return width < MIN_WIDTH or height < MIN_HEIGHT


def message(width: int, height: int) -> str:
    return f"terminal {width}x{height} is too small: rigcheck needs {MIN_WIDTH}x{MIN_HEIGHT}"


class TooSmallScreen(Screen[None]):
    """Leaves by itself once the terminal is big enough again; ctrl+q still quits meanwhile."""

    def compose(self) -> ComposeResult:
        yield Static(message(*self.app.size), id="too-small")

    def on_resize(self, event: Resize) -> None:
        if too_small(event.size.width, event.size.height):
            self.query_one("#too-small", Static).update(message(event.size.width, event.size.height))
        elif self.is_current:
            self.dismiss()

    def on_screen_resume(self) -> None:
        if not too_small(*self.app.size):
            self.dismiss()
