"""The Textual app: live panels over a run carried by a background engine, and telemetry. It never imports torch.

Runs are started in their own engine process (they outlive the app); a follower thread receives the
run's events as the engine pushes them and posts them to the app as messages (tui/messages.py), so the
app's thread never reads the store on a timer. The app opens on a run in progress. Plots and gauges
redraw at 4 Hz while a run is live, from the samples its engine streams (those its trust labels are
made from); otherwise at 2 Hz from the app's own sampler.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar

import rigcheck.themes
from rigcheck.engine.events import (
    Facts,
    Fingerprint,
    LogLine,
    Measurement,
    Progress,
    RunFinished,
    StageFinished,
    StageStarted,
    Status,
    Verdict,
    worst,
)
from rigcheck.engine.exits import EXIT_INTERRUPTED
from rigcheck.engine.registry import STAGES, StageInfo
from rigcheck.engine.report.fleet_view import host_labelled
from rigcheck.engine.report.rows import measurement_row, report_rows, verdict_row
from rigcheck.engine.run.cancel import Queued
from rigcheck.engine.run.control import ControlError
from rigcheck.engine.run.detach import StartFailed
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.stage import PROFILES
from rigcheck.engine.store import Store
from rigcheck.themes.themes import DEFAULT_THEME, THEMES, VARIABLE_DEFAULTS
from rigcheck.tui.app_keys import BINDINGS as APP_BINDINGS
from rigcheck.tui.app_keys import TABS, tab_label
from rigcheck.tui.ascii_screen import AsciiOnly
from rigcheck.tui.glyphs import ASCII, UNICODE
from rigcheck.tui.gpu_answer import GpusAnswered, ask_in_background
from rigcheck.tui.live_watch import LiveRunFound, LiveWatch
from rigcheck.tui.messages import EngineSamples, RunEnded, RunEvent, RunProgress
from rigcheck.tui.run_link import RunLink
from rigcheck.tui.screens.confirm_quit import ConfirmQuit
from rigcheck.tui.screens.history import HistoryScreen
from rigcheck.tui.screens.too_small import TooSmallScreen, too_small
from rigcheck.tui.settings import load_settings, save_setting
from rigcheck.tui.widgets.bench_panel import BenchPanel
from rigcheck.tui.widgets.burn_tab import BurnTab
from rigcheck.tui.widgets.clocks_panel import ClocksPanel
from rigcheck.tui.widgets.device_panel import DevicePanel
from rigcheck.tui.widgets.host_panel import HostPanel
from rigcheck.tui.widgets.log_panel import LogPanel
from rigcheck.tui.widgets.processes_panel import ProcessesPanel
from rigcheck.tui.widgets.results_panel import ResultsPanel
from rigcheck.tui.widgets.running_panel import RunningPanel
from rigcheck.tui.widgets.stages_panel import StagesPanel
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.events import Resize
from textual.filter import LineFilter
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, Footer, TabbedContent, TabPane

W = TypeVar("W", bound=Widget)
IDLE_ACTIONS = ("start_stage", "start_all", "cycle_device", "cycle_profile")
REDRAW_S = 0.25
IDLE_REDRAW_EVERY = 2  # with no run live, gauges and plots redraw at every second tick (2 Hz): the idle app's cost
TIME_EVERY = 4  # the time line moves once a second (every 4th redraw tick)
IDLE_SAMPLE_S = 0.5  # ...and the app's own sampler reads the hardware twice a second, not ten times
PLOT_WINDOW_S = 60.0
FIGURES_S = 0.5  # new figures go into their tables at most this often: each new row lays out the whole screen
THEME_CSS = Path(rigcheck.themes.__file__).parent / "app.tcss"


def ended_words(run_id: int | None, status: str, cancelled: list[str]) -> str:
    """What the toast says at a run's end: a run whose stages were cancelled is not called complete."""
    if not cancelled:
        return f"run {run_id} {status}"
    return f"run {run_id} ended: {', '.join(cancelled)} cancelled" + (
        " (run cancelled)" if status == "cancelled" else ""
    )


class RigcheckApp(App[int]):
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

    def on_live_run_found(self, message: LiveRunFound) -> None:
        """A run another process started while this app followed none: follow it, as at start."""
        run = message.run
        if self.running or not self._main_screen.is_attached:
            return
        names = json.loads(run["stages"] or "[]")
        if any(name not in self.panel_stages for name in names):
            self.notify(f"run {run['id']} is in progress with stages this app lacks: `rigcheck follow` shows it")
            return
        self._live = run
        self._attach_live()

    def on_resize(self, event: Resize) -> None:
        if getattr(self, "_main_screen", None) is not None:  # from on_mount on: it checks the first size
            self._check_size(event.size.width, event.size.height)

    def _check_size(self, width: int, height: int) -> None:
        """Below 80x24 say so, rather than show a layout that silently loses rows."""
        if too_small(width, height) and not any(isinstance(s, TooSmallScreen) for s in self.screen_stack):
            self.push_screen(TooSmallScreen())

    @property
    def gpus(self) -> tuple[str, ...]:
        if self._gpus is not None:
            return self._gpus
        latest = self.sampler.latest() if self.sampler is not None else None
        return tuple(f"cuda:{i}" for i in range(len(latest.gpus))) if latest is not None else ()

    def _default_device(self) -> str:
        """Every GPU there is (all of them at once), else the CPU."""
        gpus = self.gpus
        return "all" if len(gpus) > 1 else gpus[0] if gpus else "cpu"

    def _device_choices(self) -> list[str]:
        gpus = list(self.gpus)
        return ["cpu", *gpus, *(["all"] if len(gpus) > 1 else [])]

    def _refresh_choice(self) -> None:
        durations = self.store.stage_durations(self.device, self.profile)
        asking = self.asking_gpus and not self._device_chosen
        self.panel(StagesPanel).set_choice(self.device, self.profile, self.running, durations, asking)
        if self.running != self._footer_running:  # the footer shows the keys that do something now
            self._footer_running = self.running
            self.refresh_bindings()

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

    def _show_times(self) -> None:
        """The Stages panel's time line: the stage's and the run's elapsed time against earlier runs'."""
        run = (self.run_started, self.run_stages) if self.running and self.run_started is not None else None
        stage = (self.current_stage, self.stage_started) if self.current_stage and self.stage_started else None
        self.panel(StagesPanel).set_times(run, stage, time.time())

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

    # -- running stages --
    @property
    def running(self) -> bool:
        return self.link is not None

    def on_gpus_answered(self, answer: GpusAnswered) -> None:
        """Torch has said which GPUs it sees: they are the choices from now on, and a waiting run starts."""
        self.asking_gpus = False
        waiting, self._waiting = self._waiting, None
        if answer.error:
            self.panel(LogPanel).line(f"which GPUs torch sees could not be asked: {answer.error}", "bold")
            self.notify(answer.error, severity="error", timeout=15)
        else:
            self._gpus = answer.gpus
            if not self._device_chosen and not self.running:
                self.device = answer.device
        if not self.running:
            self._refresh_choice()
        if waiting is not None:
            self.start(waiting)

    def start(self, infos: list[StageInfo]) -> None:
        if self.running:
            self.action_why_not("a run is in progress: cancel it (c) first")
            return
        if self.asking_gpus and not self._device_chosen:
            self._waiting = infos
            self.notify("asking torch which GPUs it sees: the run starts when it answers")
            return
        gpus = self.gpus if self.device == "all" else tuple(d for d in self.device.split(",") if d != "cpu")
        request = RunRequest(
            tuple(infos), self.device, self.profile, self.python, gpus, telemetry=self.engine_telemetry, argv=("app",)
        )
        try:
            link = RunLink.start(self.store, request)
        except StartFailed as error:
            self.panel(LogPanel).line(f"the run could not start: {error}", "bold")
            self.notify(str(error), severity="error", timeout=15)
            return
        self._attach(link, [i.name for i in infos])

    def _attach_live(self) -> None:
        """Open on the run an engine is carrying now, if any: its earlier events first, then the new ones."""
        run, self._live = self._live, None
        if run is None:
            return
        self.device, self.profile = run["device"], run["profile"]
        self._attach(RunLink(self.store, run["id"]), json.loads(run["stages"] or "[]"))
        self.notify(
            f"attached to run {run['id']}, in progress (started by {' '.join(json.loads(run['argv'] or '[]'))})"
        )

    def _attach(self, link: RunLink, names: list[str]) -> None:
        self.link, self.run_id = link, link.run_id
        self._watch.known.add(link.run_id)
        self._watch.following.set()
        run = self.store.run(link.run_id)  # once, for the engine's pid and the run's start
        if run is not None:
            self._track(run["pid"])
        self.run_started = float(run["started"]) if run is not None and run.get("started") else time.time()
        self.run_stages, self.stage_started = list(names), None
        self.stage_verdicts = {}
        self.current_stage, self.cancelled_stages, self.stages_cancelled = None, set(), []
        self.panel(StagesPanel).reset(names)  # each run starts clean: nothing of the last run stays beside it
        self._figures = []
        self.panel(RunningPanel).clear()
        self._show_results_of(self.run_id, [])
        self.panel(LogPanel).line(f"run {self.run_id}: {', '.join(names)} on {self.device} ({self.profile})")
        self._refresh_choice()
        link.begin(self.post_message)

    def _followed(self, run_id: int) -> bool:
        """Is this message about the run we follow now (not one we left), with the panels still there?"""
        return self.link is not None and run_id == self.link.run_id and self._main_screen.is_attached

    def on_run_event(self, message: RunEvent) -> None:
        if self._followed(message.run_id):
            with suppress(NoMatches):  # a message that lands while the app shuts down: it is stored already
                self.show(message.event)

    def on_run_progress(self, message: RunProgress) -> None:
        if self._followed(message.run_id):
            with suppress(NoMatches):
                self.show(message.event)

    def on_engine_samples(self, message: EngineSamples) -> None:
        if self._followed(message.run_id):
            assert self.link is not None
            self.link.telemetry.notes = message.notes
            self.link.telemetry.add(message.samples)

    def on_run_ended(self, message: RunEnded) -> None:
        if self._followed(message.run_id):
            with suppress(NoMatches):
                self._run_ended(message.status, message.error)

    def show(self, event: Any) -> None:
        """Put one engine event on the panels (on the app's thread), as it comes from the followed run."""
        if isinstance(event, Progress):
            self._show_progress(event)
        else:
            self._show_event(event)

    def _track(self, pid: int) -> None:
        """The engine and its stage children count as rigcheck's own load, also when this app did not start them."""
        host = getattr(self.sampler, "host", None)
        if host is not None and pid:
            host.track(pid)

    def _show_progress(self, event: Progress) -> None:
        stages = self.panel(StagesPanel)
        if event.device:  # one of several GPUs measured at once
            stages.set_device_progress(event.stage, event.device, event.done, event.total)
            return
        stages.set_progress(event.stage, event.done, event.total)
        stages.set_step(f"{event.stage}: {event.what}")

    def _show_event(self, event: Any) -> None:
        stages = self.panel(StagesPanel)
        log = self.panel(LogPanel)
        if isinstance(event, StageStarted):
            self._track(event.pid)
            self.current_stage, self.stage_started = event.stage, event.t
            stages.set_running(event.stage)
            self._show_times()
            log.line(f"{event.stage}: started on {event.device} (pid {event.pid}, {event.python})")
        elif isinstance(event, Verdict):
            self.stage_verdicts.setdefault(event.stage, []).append(event.status)
            current = worst(self.stage_verdicts[event.stage])
            if current is not None:
                stages.set_interim(event.stage, current)
            self.panel(ResultsPanel).add(verdict_row(event))
            if event.status in (Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.WARN):
                log.line(f"{event.status.value} {event.stage}/{event.check}: {event.explanation}", "bold")
            if event.stage == "probe" and event.status != Status.PASS:
                self.probe_warnings.append(event.explanation)
        elif isinstance(event, Measurement):
            self.panel(BurnTab).add(event)
            self._figures.append(event)
            if not self._figures_held:  # the first after a quiet spell at once, later ones together
                self._add_figures()
        elif isinstance(event, Facts) and event.stage == "links":
            self.links_facts = event.data
            self.panel(DevicePanel).show(self.probe_facts, self.fingerprint, self.probe_warnings, self.links_facts)
        elif isinstance(event, Facts) and event.stage == "probe":
            self.probe_facts, self.probe_warnings = event.data, []
            self.panel(DevicePanel).show(self.probe_facts, self.fingerprint, self.probe_warnings, self.links_facts)
        elif isinstance(event, Fingerprint):
            self.fingerprint = event.digest
        elif isinstance(event, LogLine):
            log.line(f"{event.stage}: {event.text}", "bold" if event.level == "error" else "")
        elif isinstance(event, StageFinished):
            cancelled = event.stage in self.cancelled_stages and event.status == Status.SKIP
            stages.set_verdict(event.stage, event.status, cancelled)
            if cancelled:
                self.stages_cancelled.append(event.stage)
            self.current_stage, self.stage_started = None, None
            log.line(f"{event.stage}: {'cancelled' if cancelled else event.status.value}")
            if event.stage == "probe":
                self.panel(DevicePanel).show(self.probe_facts, self.fingerprint, self.probe_warnings, self.links_facts)
        elif isinstance(event, RunFinished):
            pass  # the follower's RunEnded message, with the run's stored error, ends the run in the app

    def _add_figures(self) -> None:
        """Put the waiting figures in the Running and Results tables, then hold new ones for FIGURES_S."""
        figures, self._figures = self._figures, []
        self._figures_held = bool(figures)
        if not figures:
            return
        with suppress(NoMatches):
            results = self.panel(ResultsPanel)
            self.panel(BenchPanel).add_measurements(figures)
            for figure in figures:
                results.add(measurement_row(figure))
        self.set_timer(FIGURES_S, self._add_figures)

    def _run_ended(self, status: str, error: str | None = None) -> None:
        self._add_figures()  # every figure of the run is in its tables when the run is seen to end
        link, self.link = self.link, None
        self._watch.following.clear()
        if link is not None:
            link.close()
        self._refresh_choice()
        if error:
            self.panel(LogPanel).line(f"run {self.run_id} ended in error: {error}", "bold")
            self.notify(f"run {self.run_id} ended in error: {error}", severity="error", timeout=15)
        else:
            self.notify(ended_words(self.run_id, status, self.stages_cancelled))

    def stop_run(self) -> None:
        """Ask the run's engine to stop the run; what was measured is already stored."""
        link, self.link = self.link, None
        self._watch.following.clear()
        if link is None:
            return
        link.close()
        problem = link.stop()
        if problem:
            self.notify(f"run {link.run_id}: {problem}", severity="error")

    # -- actions --
    def action_start_stage(self, index: int) -> None:
        if 0 <= index < len(self.stage_infos):
            self.start([self.stage_infos[index]])

    def action_start_all(self) -> None:
        self.start([i for i in self.stage_infos if self.profile in i.default_in])  # burn only in the full profile

    def action_cancel(self) -> None:
        if self.link is None:
            self.action_why_not("nothing is running")
            return
        said = "cancel asked: stopping the running stage"
        try:
            self.link.send("cancel_stage")
        except Queued as queued:  # a stopped engine acts on it when it resumes
            said = str(queued)
            self.notify(said, severity="warning")
        except ControlError as error:  # never a traceback: the run and the app go on
            self.notify(str(error), severity="error")
            return
        if self.current_stage is not None:
            self.cancelled_stages.add(self.current_stage)
        self.panel(LogPanel).line(said)

    def action_next_gpu(self) -> None:
        """The Clocks panel follows the next GPU."""
        source = self.telemetry
        latest = source.latest() if source is not None else None
        indices = [g.index for g in latest.gpus] if latest is not None else []
        if len(indices) < 2:
            self.notify("one GPU or none: nothing to switch to")
            return
        chosen = self.panel(ClocksPanel).cycle_gpu(indices)
        self.notify(f"Clocks: GPU {chosen}")

    def action_cycle_device(self) -> None:
        if self.running:
            self.notify("the device is fixed while a run is in progress", severity="warning")
            return
        choices = self._device_choices()
        self._device_chosen = True
        self.device = choices[(choices.index(self.device) + 1) % len(choices)] if self.device in choices else "cpu"
        self._refresh_choice()

    def action_cycle_profile(self) -> None:
        if self.running:
            self.notify("the profile is fixed while a run is in progress", severity="warning")
            return
        self.profile = PROFILES[(PROFILES.index(self.profile) + 1) % len(PROFILES)]
        self._refresh_choice()

    def action_show_processes(self) -> None:
        self.panel(TabbedContent).active = "tab-processes"

    def action_show_tab(self, tab: str) -> None:
        self.panel(TabbedContent).active = tab
        if tab == "tab-running":  # up and down then move through its figures, and the line below says why
            self.panel(BenchPanel).focus()

    def action_toggle_keys(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_keys()
            return
        # With no widget focused the panel lists rigcheck's own keys first, not a table's cursor keys
        # (at 80x24 those filled it); focus comes back when it closes.
        self._focus_before_keys = self.screen.focused
        self.screen.set_focus(None)
        self.action_show_help_panel()

    def action_hide_keys(self) -> None:
        self.action_hide_help_panel()
        before, self._focus_before_keys = getattr(self, "_focus_before_keys", None), None
        if before is not None and before.is_attached:
            self.screen.set_focus(before)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The footer shows what can be done now (at 80 columns it cannot hold every key at once): starting
        and choosing while idle, cancelling while a run goes on. Hidden keys still answer, and say why not."""
        if action == "hide_keys":  # esc is the Keys panel's only while it shows
            return bool(self.screen.query("HelpPanel"))
        if action in (*IDLE_ACTIONS, "cancel", "why_not") and self.screen is not getattr(self, "_main_screen", None):
            return False  # history, compare, a result's detail: their own keys, not the main screen's
        if action in IDLE_ACTIONS:
            return not self.running  # when False, the key's why_not binding answers it
        if action == "cancel":
            return self.running
        return True

    def action_why_not(self, said: str) -> None:
        self.notify(said, severity="warning")

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

    def action_results(self) -> None:
        self.panel(TabbedContent).active = "tab-results"
        self.panel(ResultsPanel).query_one(DataTable).focus()

    def action_request_quit(self) -> None:
        if not self.running:
            self.exit(0)
            return

        def answer(choice: str | None) -> None:
            if choice == "leave":
                self.left_running = self.run_id if self.running else None
                self.exit(0)
            elif choice == "stop":
                code = EXIT_INTERRUPTED if self.running else 0  # the run may have ended while the question was open
                self.stop_run()
                self.exit(code)

        self.push_screen(ConfirmQuit(), answer)

    def on_unmount(self) -> None:
        if getattr(self, "_watch", None) is not None:
            self._watch.stop()
        if self.link is not None:  # the run goes on in its engine; only our view of it closes
            self.link.close()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for index, info in enumerate(self.stage_infos):
            yield SystemCommand(f"Run stage {info.name}", info.summary, lambda i=index: self.action_start_stage(i))
        yield SystemCommand("Run all stages", "every stage in order", self.action_start_all)
        yield SystemCommand("Cancel the running stage", "the next stage still runs", self.action_cancel)
        yield SystemCommand("Next device", f"now {self.device}", self.action_cycle_device)
        yield SystemCommand("Next profile", f"now {self.profile}", self.action_cycle_profile)
        yield SystemCommand("History", "past runs; compare two side by side", self.action_history)
        yield SystemCommand("Next GPU", "the Clocks panel follows the next GPU (g)", self.action_next_gpu)
        yield SystemCommand("Processes", "other processes on each GPU and the host (o)", self.action_show_processes)
        yield SystemCommand(
            "Results", "the run's verdicts and figures; enter shows one in full (r)", self.action_results
        )
        for _, tab, title, help_text in TABS:
            yield SystemCommand(title, help_text, lambda tab=tab: self.action_show_tab(tab))
