"""Asks before quitting during a run: leave it running in its engine (the default) or stop it; nothing is lost."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

QUESTION = (
    "A run is in progress. Leave it running (it goes on without this terminal; `rigcheck` opens on it "
    "again) or stop it? Everything measured so far is kept."
)


class ConfirmQuit(ModalScreen[str | None]):
    """Dismissed with "leave", "stop", or None to stay."""

    BINDINGS = [
        Binding("l", "answer('leave')", "Leave running"),
        Binding("s", "answer('stop')", "Stop it"),
        Binding("n,escape", "answer(None)", "Stay"),
    ]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(QUESTION, id="quit-question")
            with Horizontal():
                yield Button("Stay (n)", id="stay")
                yield Button("Stop it (s)", id="stop", variant="error")
                yield Button("Leave running (l)", id="leave", variant="primary")

    def on_mount(self) -> None:
        self.query_one("#leave", Button).focus()  # enter leaves it running: the safe answer

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None if event.button.id == "stay" else event.button.id)

    def action_answer(self, answer: str | None) -> None:
        self.dismiss(answer)
