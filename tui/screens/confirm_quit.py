"""Asks before quitting during a run: quitting stops the stage child; what was measured is kept."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class ConfirmQuit(ModalScreen[bool]):
    BINDINGS = [Binding("y", "answer(True)", "Quit"), Binding("n,escape", "answer(False)", "Stay")]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(
                "A stage is running. Quit and stop it? Everything measured so far is kept.", id="quit-question"
            )
            with Horizontal():
                yield Button("Stay (n)", id="stay")
                yield Button("Quit (y)", id="quit", variant="error")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "quit")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
