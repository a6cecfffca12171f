"""The Stages panel: every stage with its state, a progress bar and its verdict; the screen sets the data."""

from __future__ import annotations

from rich.text import Text
from rigcheck.engine.events import Status
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from ..glyphs import UNICODE, Glyphs, bar
from .styling import status_text

BAR_WIDTH = 6


class StagesPanel(Vertical):
    def __init__(self, stages: list[str], glyphs: Glyphs = UNICODE, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.stage_names = stages
        self.glyphs = glyphs
        self.border_title = "Stages"

    def compose(self) -> ComposeResult:
        yield Static(id="stages-header")
        table: DataTable[Text | str] = DataTable(id="stages-table", cursor_type="row", zebra_stripes=False)
        yield table

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_column("#", key="key", width=1)
        table.add_column("stage", key="stage", width=9)
        table.add_column("state", key="state", width=7)
        table.add_column("progress", key="progress", width=BAR_WIDTH + 5)
        table.add_column("verdict", key="verdict", width=7)
        for index, name in enumerate(self.stage_names, start=1):
            table.add_row(str(index), name, "idle", "", "", key=name)

    def set_choice(self, device: str, profile: str, running: bool) -> None:
        state = "running" if running else "idle"
        self.query_one("#stages-header", Static).update(f"device {device}  profile {profile}  ({state})")

    def set_state(self, stage: str, state: str) -> None:
        table = self.query_one(DataTable)
        table.update_cell(stage, "state", status_text(self.app, "running", state))
        if state == "running":  # at 80x24 the last stages sit below the fold: bring the running one into view
            table.move_cursor(row=table.get_row_index(stage))

    def set_progress(self, stage: str, done: int, total: int) -> None:
        fraction = done / total if total else 0.0
        cell = f"{bar(fraction, BAR_WIDTH, self.glyphs)} {fraction:>3.0%}"
        self.query_one(DataTable).update_cell(stage, "progress", cell)

    def set_verdict(self, stage: str, status: Status, final: bool = False) -> None:
        table = self.query_one(DataTable)
        table.update_cell(stage, "verdict", status_text(self.app, status.value))
        if final:
            table.update_cell(stage, "state", "done")
            if status not in (Status.CRASH, Status.TIMEOUT):
                table.update_cell(stage, "progress", f"{bar(1.0, BAR_WIDTH, self.glyphs)} 100%")

    def reset(self, stage: str) -> None:
        table = self.query_one(DataTable)
        for column in ("progress", "verdict"):
            table.update_cell(stage, column, "")
        table.update_cell(stage, "state", "queued")
