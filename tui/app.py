"""The Textual app: live panels over the engine's runner and telemetry. It never imports torch.

Engine threads (the run's supervisor, the sampler) only post messages; panels are updated here, on
the app's own thread. Plots and gauges redraw from the sampler's ring buffer at 4 Hz.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
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
from rigcheck.engine.registry import STAGES, StageInfo
from rigcheck.engine.runner import RunPlan
from rigcheck.engine.session import RunSession
from rigcheck.engine.stage import PROFILES
from rigcheck.engine.store import Store
from rigcheck.themes.themes import DEFAULT_THEME, THEMES, VARIABLE_DEFAULTS
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer, TabbedContent, TabPane

from .glyphs import ASCII, UNICODE
from .messages import EngineEvent, StageProgress
from .screens.confirm_quit import ConfirmQuit
from .screens.history import HistoryScreen
from .settings import load_settings, save_setting
from .widgets.bench_panel import BenchPanel
from .widgets.burn_plot import BurnPlot
from .widgets.clocks_panel import ClocksPanel
from .widgets.device_panel import DevicePanel
from .widgets.host_panel import HostPanel
from .widgets.log_panel import LogPanel
from .widgets.results_panel import ResultsPanel
from .widgets.stages_panel import StagesPanel

W = TypeVar("W", bound=Widget)
REDRAW_S = 0.25
PLOT_WINDOW_S = 60.0
THEME_CSS = Path(rigcheck.themes.__file__).parent / "app.tcss"


def verdict_row(v: Verdict | dict[str, Any]) -> dict[str, Any]:
    if isinstance(v, Verdict):
        return {
            "kind": "verdict",
            "stage": v.stage,
            "name": v.check,
            "status": v.status.value,
            "explanation": v.explanation,
            "numbers": v.numbers,
        }
    return {
        "kind": "verdict",
        "stage": v["stage"],
        "name": v["check_name"],
        "status": v["status"],
        "explanation": v["explanation"],
        "numbers": v["numbers"],
    }


def measurement_row(m: Measurement | dict[str, Any]) -> dict[str, Any]:
    if isinstance(m, Measurement):
        m = {
            "stage": m.stage,
            "name": m.name,
            "value": m.value,
            "unit": m.unit,
            "device": m.device,
            "conditions": m.conditions,
        }
    return {"kind": "measurement"} | {k: m[k] for k in ("stage", "name", "value", "unit", "device", "conditions")}


class RigcheckApp(App[int]):
    CSS_PATH = str(THEME_CSS)
    TITLE = "rigcheck"
    BINDINGS = [
        Binding("a", "start_all", "Run all"),
        Binding("c", "cancel", "Cancel"),
        Binding("d", "cycle_device", "Device"),
        Binding("p", "cycle_profile", "Profile"),
        Binding("h", "history", "History"),
        Binding("ctrl+q,ctrl+c", "request_quit", "Quit", priority=True),
        *(Binding(str(n), f"start_stage({n - 1})", f"Stage {n}", show=False) for n in range(1, 10)),
    ]

    def __init__(
        self,
        store: Store,
        sampler: Any = None,
        stages: list[StageInfo] | None = None,
        device: str | None = None,
        profile: str = "standard",
        python: str = sys.executable,
        ascii_only: bool = False,
    ) -> None:
        super().__init__()
        self.store = store
        self.sampler = sampler
        self.stage_infos = stages or list(STAGES.values())
        self.profile = profile
        self.python = python
        self.ascii_only = ascii_only
        self.glyphs = ASCII if ascii_only else UNICODE
        self.device = device or self._default_device()
        self.session: RunSession | None = None
        self.run_id: int | None = None
        self.stage_verdicts: dict[str, list[Status]] = {}
        self.probe_facts: dict[str, Any] | None = None
        self.fingerprint: str | None = None
        self.probe_warnings: list[str] = []

    # -- layout --
    def compose(self) -> ComposeResult:
        with Horizontal(id="top"):
            yield StagesPanel([i.name for i in self.stage_infos], self.glyphs, id="stages")
            with Vertical(id="live"):
                yield ClocksPanel(id="clocks")
                yield HostPanel(self.glyphs, id="host")
        with TabbedContent(id="bottom", initial="tab-running"):
            with TabPane("Running", id="tab-running"):
                yield BenchPanel(id="bench")
            with TabPane("Results", id="tab-results"):
                yield ResultsPanel(id="results")
            with TabPane("Device", id="tab-device"):
                yield DevicePanel(id="device")
            with TabPane("Log", id="tab-log"):
                yield LogPanel(id="log")
            with TabPane("Burn", id="tab-burn"):
                yield BurnPlot(id="burn-plot")
        yield Footer()

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
        self.theme = remembered if remembered in self.available_themes else DEFAULT_THEME
        self.theme_changed_signal.subscribe(self, lambda theme: save_setting("theme", theme.name))
        if self.ascii_only:
            self.add_class("ascii")
        self._load_last_probe()
        self._refresh_choice()
        self.set_interval(REDRAW_S, self.refresh_live)
        self.refresh_live()

    def _default_device(self) -> str:
        latest = self.sampler.latest() if self.sampler is not None else None
        return "cuda:0" if latest is not None and latest.gpus else "cpu"

    def _device_choices(self) -> list[str]:
        latest = self.sampler.latest() if self.sampler is not None else None
        gpus = [f"cuda:{i}" for i in range(len(latest.gpus))] if latest is not None else []
        return ["cpu", *gpus, "all"]

    def _refresh_choice(self) -> None:
        self.panel(StagesPanel).set_choice(self.device, self.profile, self.running)

    def _load_last_probe(self) -> None:
        latest = self.store.latest_probe()  # one query at start-up, not a full report per past run
        if latest is not None:
            self.probe_facts, self.fingerprint, self.probe_warnings = latest
        self.panel(DevicePanel).show(self.probe_facts, self.fingerprint, self.probe_warnings)

    # -- live telemetry, drawn from the sampler's buffer --
    def refresh_live(self) -> None:
        if self.sampler is None or not self._main_screen.is_attached:
            return
        latest = self.sampler.latest()
        try:
            host, clocks = self.panel(HostPanel), self.panel(ClocksPanel)
        except NoMatches:
            return  # the timer can fire once more during shutdown, after the panels are gone
        host.show(latest.host if latest else None)
        if latest is not None:
            samples = self.sampler.window(latest.t - PLOT_WINDOW_S, latest.t)
            clocks.redraw(samples, list(getattr(self.sampler, "notes", [])), self.glyphs)

    # -- running stages --
    @property
    def running(self) -> bool:
        return self.session is not None

    def start(self, infos: list[StageInfo]) -> None:
        if self.running:
            self.notify("a run is in progress: cancel it (c) first", severity="warning")
            return
        names = [i.name for i in infos]
        self.run_id = self.store.begin_run(names, self.device, self.profile, self.python, ["app"])
        plan = RunPlan(
            self.run_id,
            infos,
            self.device,
            self.profile,
            self.python,
            self.store.path.parent / "logs" / f"run-{self.run_id}",
        )
        self.session = RunSession(self.store, plan, [self._forward], self.sampler)
        self.stage_verdicts = {}
        panel = self.panel(StagesPanel)
        for name in names:
            panel.reset(name)
        self.panel(ResultsPanel).clear()
        self.panel(LogPanel).line(f"run {self.run_id}: {', '.join(names)} on {self.device} ({self.profile})")
        self.session.start()
        self._refresh_choice()

    def _forward(self, event: Any) -> None:
        """Called on the run's supervisor thread: hand the event to the app's thread, nothing else."""
        self.post_message(StageProgress(event) if isinstance(event, Progress) else EngineEvent(event))

    def on_stage_progress(self, message: StageProgress) -> None:
        if not self._main_screen.is_attached:
            return
        event = message.event
        self.panel(StagesPanel).set_progress(event.stage, event.done, event.total)

    def on_engine_event(self, message: EngineEvent) -> None:
        if not self._main_screen.is_attached:
            return
        with suppress(NoMatches):  # an event that lands while the app shuts down: it is stored already
            self._show_event(message.event)

    def _show_event(self, event: Any) -> None:
        stages = self.panel(StagesPanel)
        log = self.panel(LogPanel)
        if isinstance(event, StageStarted):
            stages.set_state(event.stage, "running")
            log.line(f"{event.stage}: started on {event.device} (pid {event.pid}, {event.python})")
        elif isinstance(event, Verdict):
            self.stage_verdicts.setdefault(event.stage, []).append(event.status)
            current = worst(self.stage_verdicts[event.stage])
            if current is not None:
                stages.set_verdict(event.stage, current)
            self.panel(ResultsPanel).add(verdict_row(event))
            if event.status in (Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.WARN):
                log.line(f"{event.status.value} {event.stage}/{event.check}: {event.explanation}", "bold")
            if event.stage == "probe" and event.status != Status.PASS:
                self.probe_warnings.append(event.explanation)
        elif isinstance(event, Measurement):
            self.panel(BenchPanel).add_measurement(event)
            self.panel(BurnPlot).add(event)
            self.panel(ResultsPanel).add(measurement_row(event))
        elif isinstance(event, Facts) and event.stage == "probe":
            self.probe_facts, self.probe_warnings = event.data, []
            self.panel(DevicePanel).show(self.probe_facts, self.fingerprint, self.probe_warnings)
        elif isinstance(event, Fingerprint):
            self.fingerprint = event.digest
        elif isinstance(event, LogLine):
            log.line(f"{event.stage}: {event.text}", "bold" if event.level == "error" else "")
        elif isinstance(event, StageFinished):
            stages.set_verdict(event.stage, event.status, final=True)
            log.line(f"{event.stage}: {event.status.value}")
            if event.stage == "probe":
                self.panel(DevicePanel).show(self.probe_facts, self.fingerprint, self.probe_warnings)
        elif isinstance(event, RunFinished):
            self._run_ended(event.status)

    def _run_ended(self, status: str) -> None:
        if self.session is not None:
            self.session.wait(5)
        self.session = None
        self._refresh_choice()
        self.notify(f"run {self.run_id} {status}")

    def stop_run(self) -> None:
        """Stop the stage child and mark the run interrupted; what was measured is already stored."""
        if self.session is None or self.run_id is None:
            return
        self.session.cancel()
        self.session.wait(10)
        self.store.end_run(self.run_id, "interrupted", 130)
        self.session = None

    # -- actions --
    def action_start_stage(self, index: int) -> None:
        if 0 <= index < len(self.stage_infos):
            self.start([self.stage_infos[index]])

    def action_start_all(self) -> None:
        self.start([i for i in self.stage_infos if self.profile in i.default_in])  # burn only in the full profile

    def action_cancel(self) -> None:
        if self.session is None:
            self.notify("nothing is running")
            return
        self.session.run.cancel_stage()
        self.panel(LogPanel).line("cancel asked: stopping the running stage")

    def action_cycle_device(self) -> None:
        if self.running:
            self.notify("the device is fixed while a run is in progress", severity="warning")
            return
        choices = self._device_choices()
        self.device = choices[(choices.index(self.device) + 1) % len(choices)] if self.device in choices else "cpu"
        self._refresh_choice()

    def action_cycle_profile(self) -> None:
        if self.running:
            self.notify("the profile is fixed while a run is in progress", severity="warning")
            return
        self.profile = PROFILES[(PROFILES.index(self.profile) + 1) % len(PROFILES)]
        self._refresh_choice()

    def action_history(self) -> None:
        self.push_screen(HistoryScreen(self.store), self.show_run)

    def show_run(self, run_id: int | None) -> None:
        if run_id is None:
            return
        report = self.store.report(run_id)
        if report is None:
            return
        results = self.panel(ResultsPanel)
        results.clear()
        for verdict in report["verdicts"]:
            results.add(verdict_row(verdict))
        for measurement in report["measurements"]:
            results.add(measurement_row(measurement))
        self.panel(TabbedContent).active = "tab-results"

    def action_request_quit(self) -> None:
        if not self.running:
            self.exit(0)
            return

        def answer(quit_now: bool | None) -> None:
            if quit_now:
                self.stop_run()
                self.exit(130)

        self.push_screen(ConfirmQuit(), answer)

    def on_unmount(self) -> None:
        self.stop_run()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for index, info in enumerate(self.stage_infos):
            yield SystemCommand(f"Run stage {info.name}", info.summary, lambda i=index: self.action_start_stage(i))
        yield SystemCommand("Run all stages", "every stage in order", self.action_start_all)
        yield SystemCommand("Cancel the running stage", "the next stage still runs", self.action_cancel)
        yield SystemCommand("Next device", f"now {self.device}", self.action_cycle_device)
        yield SystemCommand("Next profile", f"now {self.profile}", self.action_cycle_profile)
        yield SystemCommand("History", "past runs; compare two side by side", self.action_history)
