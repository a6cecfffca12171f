"""The Stages panel: every stage with its state, a progress bar and its verdict; the screen sets the data."""

from __future__ import annotations

from rich.text import Text
from rigcheck.engine.events import Status
from rigcheck.tui.glyphs import UNICODE, Glyphs, bar
from rigcheck.tui.widgets.live_text import LiveText
from rigcheck.tui.widgets.run_clock import duration_text, time_line
from rigcheck.tui.widgets.stage_keys import stage_key
from rigcheck.tui.widgets.steady_table import SteadyTable
from rigcheck.tui.widgets.styling import status_text
from rigcheck.tui.widgets.why_line import WhyLine
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widgets import DataTable

BAR_WIDTH = 5
PROGRESS_REDRAW_S = 0.25  # a bar changes at most this often: each change repaints the whole table


def expected_text(stages: list[str], durations: dict[str, float]) -> str:
    """What running every stage should take, from earlier runs on the chosen device and profile; at most
    44 characters, so that it fits the panel at any terminal size."""
    known = [durations[s] for s in stages if s in durations]
    if not known:
        return "expected: no earlier run"
    unknown = len(stages) - len(known)
    rest = f" + {unknown} stage{'s' if unknown > 1 else ''} not run before" if unknown else " for all stages"
    return f"expected: {duration_text(sum(known))}{rest}"


# Below WIDE_AT columns the verdict column is 7 wide: the two longer words, shortened where they cannot be cut off.
# From WIDE_AT on, the panel is 5 wider and every verdict shows whole (INCONCLUSIVE, NOT JUDGED).
SHORT = {Status.INCONCLUSIVE: "INCONCL", Status.NOT_JUDGED: "NOT JDG"}
WIDE_AT = 100
VERDICT_WIDTH = {False: 7, True: max(len(s.value) for s in Status)}
PANEL_WIDTH = {False: 48, True: 48 + VERDICT_WIDTH[True] - VERDICT_WIDTH[False]}


def verdict_cell(app: App, status: Status, whole: bool = False) -> Text:
    return status_text(app, status.value, None if whole else SHORT.get(status))


class StagesTable(SteadyTable[Text | str]):
    """The stages' rows. Its height changes without the panel's when the run's time line above it shows or
    hides; the panel then says again which rows show."""

    def on_resize(self) -> None:
        if isinstance(self.parent, StagesPanel):
            self.call_after_refresh(self.parent._show_extent)


class StagesPanel(Vertical):
    def __init__(self, stages: list[str], glyphs: Glyphs = UNICODE, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self.stage_names = stages
        self.glyphs = glyphs
        self.border_title = "Stages"
        self.border_subtitle = ""
        self.durations: dict[str, float] = {}
        self.states = dict.fromkeys(stages, "idle")
        self.per_device: dict[str, dict[str, float]] = {}  # stage -> GPU -> fraction done
        self._bars: dict[str, str] = {}  # progress cells waiting for the next redraw
        self._bars_held = False  # a bar was drawn less than PROGRESS_REDRAW_S ago
        self.verdicts: dict[str, Status] = {}  # each stage's verdict shown, to draw again when the width changes
        self.wide = False  # the terminal has room for whole verdicts (fit_width)

    def compose(self) -> ComposeResult:
        yield LiveText(id="stages-expected")  # changes with every progress event: repaints only its own line
        yield WhyLine(id="stages-time")  # while a run goes on: its time and the stage's, against earlier runs
        table = StagesTable(id="stages-table", cursor_type="row", zebra_stripes=False)
        yield table

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.styles.scrollbar_size_vertical = 0  # the bottom border says which rows show; the verdict keeps its room
        table.add_column("#", key="key", width=1)
        table.add_column("stage", key="stage", width=9)
        table.add_column("state", key="state", width=9)
        table.add_column("progress", key="progress", width=BAR_WIDTH + 5)
        table.add_column("verdict", key="verdict", width=VERDICT_WIDTH[self.wide])
        for index, name in enumerate(self.stage_names):
            table.add_row(stage_key(index), name, "idle", "", "", key=name)
        self.watch(table, "scroll_y", lambda _: self._show_extent(), init=False)

    def on_resize(self) -> None:
        self.call_after_refresh(self._show_extent)

    def fit_width(self, columns: int) -> None:
        """The terminal is `columns` wide: from WIDE_AT on, the panel and its verdict column widen so that every
        verdict shows whole; below, the two long ones are shortened."""
        wide = columns >= WIDE_AT
        if wide == self.wide:
            return
        self.wide = wide
        self.styles.width = PANEL_WIDTH[wide]
        if not self.is_mounted:
            return
        table = self.query_one(DataTable)
        table.remove_column("verdict")
        table.add_column("verdict", key="verdict", width=VERDICT_WIDTH[wide], default="")
        for stage, status in self.verdicts.items():
            table.update_cell(stage, "verdict", verdict_cell(self.app, status, wide))

    def _show_verdict(self, stage: str, status: Status) -> None:
        self.verdicts[stage] = status
        self.query_one(DataTable).update_cell(stage, "verdict", verdict_cell(self.app, status, self.wide))

    def _show_extent(self) -> None:
        """Which rows show, in the bottom border, when not all of them fit (9 stages at 80x24 show 7)."""
        table = self.query_one(DataTable)
        shown = table.scrollable_content_region.height - (table.header_height if table.show_header else 0)
        count = table.row_count
        if shown <= 0 or shown >= count:
            extent = ""
        else:
            first = min(round(table.scroll_y), count - shown) + 1
            last = first + shown - 1
            more = "more below" if last < count else "more above"
            more = "more above and below" if first > 1 and last < count else more
            extent = f"{first}-{last} of {count}, {more}"
        if self.border_subtitle != extent:
            self.border_subtitle = extent

    def set_choice(
        self, device: str, profile: str, running: bool, durations: dict[str, float], asking: bool = False
    ) -> None:
        """The device and profile a run would use, and how long each stage took there before; `asking`:
        the device is telemetry's guess until torch says which GPUs it sees."""
        state = "running" if running else "asking torch" if asking else "idle"
        self.border_title = f"Stages: {device}, {profile} ({state})"  # in the border: one more stage shows
        self.durations = durations
        if not running:
            self.set_step(expected_text(self.stage_names, durations))
        table = self.query_one(DataTable)
        for name in self.stage_names:
            if self.states[name] in ("idle", "queued"):
                self._bars.pop(name, None)
                table.update_cell(name, "progress", duration_text(durations[name]) if name in durations else "")

    def set_times(self, run: tuple[float, list[str]] | None, stage: tuple[str, float] | None, now: float) -> None:
        """The time line: shown while a run goes on (`run` is its start and stages), hidden otherwise."""
        line = self.query_one("#stages-time", WhyLine)
        if run is None:
            if line.display:
                line.display = False
            return
        started, stages = run
        name, since = stage if stage is not None else (None, None)
        line.set(time_line(now, started, stages, self.durations, name, since))
        if not line.display:
            line.display = True

    def set_step(self, text: str) -> None:
        self.query_one("#stages-expected", LiveText).set(Text(text, no_wrap=True, overflow="ellipsis"))

    def set_running(self, stage: str) -> None:
        """The stage's child started: its bar starts at nothing done (its estimate moves to the step line)."""
        self.states[stage] = "running"
        table = self.query_one(DataTable)
        table.update_cell(stage, "state", status_text(self.app, "running"))
        table.move_cursor(row=table.get_row_index(stage))  # at 80x24 the last stages sit below the fold
        self.set_progress(stage, 0, 1)
        before = f", took {duration_text(self.durations[stage])} before" if stage in self.durations else ""
        self.set_step(f"{stage}: started{before}")

    def set_progress(self, stage: str, done: int, total: int) -> None:
        fraction = done / total if total else 0.0
        self._bars[stage] = f"{bar(fraction, BAR_WIDTH, self.glyphs)} {fraction:>4.0%}"
        if not self._bars_held:  # the first change after a quiet spell shows at once, later ones at the next redraw
            self._draw_bars()

    def _draw_bars(self) -> None:
        """Put the waiting progress cells in the table, then hold further ones for PROGRESS_REDRAW_S."""
        self._bars_held = bool(self._bars)
        if not self._bars:
            return
        table = self.query_one(DataTable)
        for stage, cell in self._bars.items():
            if table.get_cell(stage, "progress") != cell:
                table.update_cell(stage, "progress", cell)
        self._bars = {}
        self.set_timer(PROGRESS_REDRAW_S, self._draw_bars)

    def set_device_progress(self, stage: str, device: str, done: int, total: int) -> None:
        """One GPU's progress in a stage measured on several at once: the bar shows the mean, the step
        line each GPU (`matmul 0:60% 1:55%`), so a GPU that lags is seen."""
        fractions = self.per_device.setdefault(stage, {})
        fractions[device] = done / total if total else 0.0
        mean = sum(fractions.values()) / len(fractions)
        self.set_progress(stage, round(mean * 1000), 1000)
        cells = " ".join(f"{d.removeprefix('cuda:')}:{f:.0%}" for d, f in sorted(fractions.items()))
        self.set_step(f"{stage} {cells}")

    def set_interim(self, stage: str, status: Status) -> None:
        """A verdict while the stage still runs: only a bad one is sure to stand, so PASS waits for the end."""
        if status.severity > Status.PASS.severity:
            self._show_verdict(stage, status)

    def set_verdict(self, stage: str, status: Status, cancelled: bool = False) -> None:
        """The stage's final verdict; a cancelled stage keeps the bar where it stopped."""
        if stage in self._bars:  # where it stopped, before the verdict
            self.query_one(DataTable).update_cell(stage, "progress", self._bars.pop(stage))
        table = self.query_one(DataTable)
        self._show_verdict(stage, status)
        self.states[stage] = "cancelled" if cancelled else "done"
        table.update_cell(stage, "state", status_text(self.app, "cancelled") if cancelled else "done")
        if not cancelled and status not in (Status.CRASH, Status.TIMEOUT):
            table.update_cell(stage, "progress", f"{bar(1.0, BAR_WIDTH, self.glyphs)} 100%")

    def reset(self, queued: list[str]) -> None:
        """A new run starts clean: its stages are queued, every other one idle, nothing from before."""
        table = self.query_one(DataTable)
        self.per_device = {}
        self._bars = {}
        self.verdicts = {}
        for name in self.stage_names:
            self.states[name] = "queued" if name in queued else "idle"
            table.update_cell(name, "state", self.states[name])
            table.update_cell(name, "verdict", "")
            table.update_cell(name, "progress", duration_text(self.durations[name]) if name in self.durations else "")
