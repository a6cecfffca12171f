"""The Textual app: live panels over a run carried by a background engine, and telemetry. It never imports torch.

Runs are started in their own engine process (they outlive the app); a follower thread receives the
run's events as the engine pushes them and posts them to the app as messages (tui/messages.py), so the
app's thread never reads the store on a timer. The app opens on a run in progress. Plots and gauges
redraw at 4 Hz while a run is live, from the samples its engine streams (those its trust labels are
made from); otherwise at 2 Hz from the app's own sampler.

Split by job: following a run (app_follow.py), the device and profile a run would use (app_choice.py),
keys that only show or tell (app_keys.py), starting, cancelling and quitting (app_start.py); this module lays
out the screen and draws the live panels.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

import rigcheck.themes
from rigcheck.engine.events import (
    Measurement,
    Status,
)
from rigcheck.engine.registry import STAGES, StageInfo
from rigcheck.engine.report.fleet_view import host_labelled
from rigcheck.engine.report.rows import report_rows
from rigcheck.engine.store import Store
from rigcheck.themes.themes import DEFAULT_THEME, THEMES, VARIABLE_DEFAULTS
from rigcheck.tui.app_choice import RunChoice
from rigcheck.tui.app_follow import FollowRun
from rigcheck.tui.app_keys import BINDINGS as APP_BINDINGS
from rigcheck.tui.app_keys import TABS, KeyActions, tab_label
from rigcheck.tui.app_start import StartStop
from rigcheck.tui.ascii_screen import AsciiOnly
from rigcheck.tui.glyphs import ASCII, UNICODE
from rigcheck.tui.gpu_answer import ask_in_background
from rigcheck.tui.live_watch import LiveWatch
from rigcheck.tui.run_link import RunLink
from rigcheck.tui.screens.history import HistoryScreen
from rigcheck.tui.screens.too_small import TooSmallScreen, too_small
from rigcheck.tui.settings import load_settings, save_setting
from rigcheck.tui.widgets.burn_tab import BurnTab
from rigcheck.tui.widgets.clocks_panel import ClocksPanel
from rigcheck.tui.widgets.device_panel import DevicePanel
from rigcheck.tui.widgets.host_panel import HostPanel
from rigcheck.tui.widgets.log_panel import LogPanel
from rigcheck.tui.widgets.processes_panel import ProcessesPanel
from rigcheck.tui.widgets.results_panel import ResultsPanel
from rigcheck.tui.widgets.running_panel import RunningPanel
from rigcheck.tui.widgets.stages_panel import StagesPanel
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.events import Resize
from textual.filter import LineFilter
from textual.widget import Widget
from textual.widgets import DataTable, Footer, TabbedContent, TabPane

W = TypeVar("W", bound=Widget)
__all__ = ["TABS", "RigcheckApp"]  # TABS: tests read the tabs from here
REDRAW_S = 0.25
IDLE_REDRAW_EVERY = 2  # with no run live, gauges and plots redraw at every second tick (2 Hz): the idle app's cost
TIME_EVERY = 4  # the time line moves once a second (every 4th redraw tick)
IDLE_SAMPLE_S = 0.5  # ...and the app's own sampler reads the hardware twice a second, not ten times
PLOT_WINDOW_S = 60.0
THEME_CSS = Path(rigcheck.themes.__file__).parent / "app.tcss"


class RigcheckApp(FollowRun, RunChoice, KeyActions, StartStop, App[int]):
    CSS_PATH = str(THEME_CSS)
    TITLE = "rigcheck"
    BINDINGS = APP_BINDINGS

    def __init__(
        self,
        store: Store,
        sampler: Any = None,
        stages: list[StageInfo] | None = None,
        device: str | None = None,
        profile: str = "standard",
        python: str = sys.executable,
        ascii_only: bool = False,
        gpus: tuple[str, ...] | None = None,
        engine_telemetry: bool = True,
        ask_gpus: bool = False,
    ) -> None:
        super().__init__()
        self.engine_telemetry = engine_telemetry  # the engine's own sampler, whose readings the figures carry
        self._gpus = gpus  # as the stage interpreter's torch sees them; None: count them from telemetry
        self.store = store
        self.sampler = sampler
        self._live_sample_s = float(getattr(sampler, "interval", 0.1))  # the rate it was started at, for live runs
        self._idle_sample_s = max(IDLE_SAMPLE_S, self._live_sample_s)
        self.stage_infos = stages or list(STAGES.values())
        self.profile = profile
        self.python = python
        self.ascii_only = ascii_only
        self.glyphs = ASCII if ascii_only else UNICODE
        self._ascii_filter = AsciiOnly()
        self.device = device or self._default_device()
        self.asking_gpus = ask_gpus  # torch's answer is on its way (tui/gpu_answer.py); telemetry's guess meanwhile
        self._device_chosen = False  # the user changed the device with d: torch's answer does not override it
        self._waiting: list[StageInfo] | None = None  # a run asked for before torch answered
        self._live = RunLink.live_run(store)  # a run in progress to open on: its stages get rows too
        names = [i.name for i in self.stage_infos]
        live_names = json.loads(self._live["stages"] or "[]") if self._live else []
        self.panel_stages = names + [n for n in live_names if n not in names]
        self.link: RunLink | None = None
        self.left_running: int | None = None  # the run the user chose to leave running on quitting
        self.run_id: int | None = None
        self.stage_verdicts: dict[str, list[Status]] = {}
        self.probe_facts: dict[str, Any] | None = None
        self.links_facts: dict[str, Any] | None = None
        self.fingerprint: str | None = None
        self.probe_warnings: list[str] = []
        self.current_stage: str | None = None
        self.run_started: float | None = None  # wall time, from the store, of the run followed now
        self.run_stages: list[str] = []
        self.stage_started: float | None = None  # wall time of the current stage's StageStarted
        self.cancelled_stages: set[str] = set()  # asked to cancel
        self.stages_cancelled: list[str] = []  # ...and ended cancelled
        self._figures: list[Measurement] = []  # waiting for the next FIGURES_S
        self._figures_held = False
        self._footer_running = False  # what the footer's keys were last chosen for

    # -- layout --
    def compose(self) -> ComposeResult:
        with Horizontal(id="top"):
            yield StagesPanel(self.panel_stages, self.glyphs, id="stages")
            with Vertical(id="live"):
                yield ClocksPanel(id="clocks")
                yield HostPanel(self.glyphs, id="host")
        with TabbedContent(id="bottom", initial="tab-running"):
            with TabPane(tab_label("tab-running", "Running"), id="tab-running"):
                yield RunningPanel(self.glyphs, id="running")
            with TabPane(tab_label("tab-results", "Results"), id="tab-results"):
                yield ResultsPanel(id="results")
            with TabPane(tab_label("tab-device", "Device"), id="tab-device"):
                yield DevicePanel(id="device")
            with TabPane(tab_label("tab-log", "Log"), id="tab-log"):
                yield LogPanel(id="log")
            with TabPane(tab_label("tab-processes", "Processes"), id="tab-processes"):
                yield ProcessesPanel(id="processes")
            with TabPane(tab_label("tab-burn", "Burn"), id="tab-burn"):
                yield BurnTab([i.name for i in self.stage_infos], id="burn")
        yield Footer(compact=True)  # every key fits at 80 columns

    def get_line_filters(self) -> Sequence[LineFilter]:
        filters = super().get_line_filters()
        return [*filters, self._ascii_filter] if self.ascii_only else filters

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return dict(VARIABLE_DEFAULTS)

    def panel(self, kind: type[W]) -> W:
        """A panel of the main screen, also while another screen (history, the quit question) is on top."""
        return self._main_screen.query_one(kind)

    def on_mount(self) -> None:
        self._main_screen = self.screen
        for theme in THEMES:
            self.register_theme(theme)
        remembered = load_settings().get("theme")
        self.theme = remembered if remembered in {t.name for t in THEMES} else DEFAULT_THEME
        for name in set(self.available_themes) - {t.name for t in THEMES}:
            self.unregister_theme(name)  # the palette offers rigcheck's three themes, as the README says
        self.theme_changed_signal.subscribe(self, lambda theme: save_setting("theme", theme.name))
        if self.ascii_only:
            self.add_class("ascii")
        self._load_last_probe()
        self._refresh_choice()
        self._ticks = 0
        self.set_interval(REDRAW_S, self._refresh_live_tick)
        self.refresh_live()
        self.call_after_refresh(self.refresh_live)  # again once laid out, with the panels' real sizes
        self._check_size(*self.size)
        self._watch = LiveWatch(self.store, self.post_message)
        if self.asking_gpus:  # once the first screen is drawn: on 2 cores, torch's import would slow that down
            self.call_after_refresh(ask_in_background, self.python, self.post_message)
        self._attach_live()
        self._watch.start()

    def on_resize(self, event: Resize) -> None:
        if getattr(self, "_main_screen", None) is not None:  # from on_mount on: it checks the first size
            self._check_size(event.size.width, event.size.height)

    def _check_size(self, width: int, height: int) -> None:
        """Below 80x24 say so, rather than show a layout that silently loses rows; from 100 columns the Stages
        panel shows every verdict whole."""
        self.panel(StagesPanel).fit_width(width)
        if too_small(width, height) and not any(isinstance(s, TooSmallScreen) for s in self.screen_stack):
            self.push_screen(TooSmallScreen())

    def _load_last_probe(self) -> None:
        latest = self.store.latest_probe()  # one query at start-up, not a full report per past run
        if latest is not None:
            self.probe_facts, self.fingerprint, self.probe_warnings = latest
        self.panel(DevicePanel).show(self.probe_facts, self.fingerprint, self.probe_warnings, self.links_facts)

    # -- live telemetry, drawn from the sampler's buffer --
    @property
    def telemetry(self) -> Any:
        """Where the live panels draw from: the run's engine while it streams samples, else our own sampler."""
        link = self.link
        if link is not None and link.telemetry.latest() is not None:
            return link.telemetry
        return self.sampler

    def _refresh_live_tick(self) -> None:
        self._ticks += 1
        if self._ticks % TIME_EVERY == 0 or not self.running:
            with suppress(NoMatches):
                self._show_times()
        if self.sampler is not None and hasattr(self.sampler, "pace"):
            self.sampler.pace(self._idle_sample_s if not self.running else self._live_sample_s)
        if self.running or self._ticks % IDLE_REDRAW_EVERY == 0:
            self.refresh_live()

    def refresh_live(self) -> None:
        source = self.telemetry
        if source is None or not self._main_screen.is_attached:
            return
        latest = source.latest()
        try:
            host, clocks = self.panel(HostPanel), self.panel(ClocksPanel)
        except NoMatches:
            return  # the timer can fire once more during shutdown, after the panels are gone
        host.show(latest.host if latest else None)
        self.panel(ProcessesPanel).show(latest)
        if latest is not None:
            samples = source.window(latest.t - PLOT_WINDOW_S, latest.t)
            clocks.redraw(samples, list(getattr(source, "notes", [])), self.glyphs)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        """The Processes panel marks what ran beside the figure highlighted in Results."""
        if event.data_table.id == "results-table" and self._main_screen.is_attached:
            rows = self.panel(ResultsPanel).rows
            self.panel(ProcessesPanel).select(rows[event.cursor_row] if 0 <= event.cursor_row < len(rows) else None)

    def action_history(self) -> None:
        self.push_screen(HistoryScreen(self.store), self.show_run)

    def show_run(self, run_id: int | None) -> None:
        if run_id is None:
            return
        report = self.store.report(run_id)
        if report is None:
            return
        self._show_results_of(run_id, host_labelled(report_rows(report, by_time=True)))  # a fleet's: host by device
        self.action_results()

    def _show_results_of(self, run_id: int | None, rows: list[dict[str, Any]]) -> None:
        """The Results tab holds one run at a time, and its label says which."""
        results = self.panel(ResultsPanel)
        results.clear()
        for row in rows:
            results.add(row)
        label = f"Results: run {run_id}" if run_id else "Results"
        self.panel(TabbedContent).get_tab("tab-results").label = tab_label("tab-results", label)

    def on_unmount(self) -> None:
        if getattr(self, "_watch", None) is not None:
            self._watch.stop()
        if self.link is not None:  # the run goes on in its engine; only our view of it closes
            self.link.close()
