"""How the app follows a run: it attaches to one (its own, or one another process started), puts each of its
events on the panels as the follower thread posts them, and sees it end.

A mixin of RigcheckApp (tui/app.py), which holds the state it reads: the link, the run's stages and times.
"""

from __future__ import annotations

import json
import time
from contextlib import suppress
from typing import Any

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
from rigcheck.engine.report.rows import measurement_row, verdict_row
from rigcheck.tui.live_watch import LiveRunFound
from rigcheck.tui.messages import EngineSamples, RunEnded, RunEvent, RunProgress
from rigcheck.tui.run_link import RunLink
from rigcheck.tui.widgets.bench_panel import BenchPanel
from rigcheck.tui.widgets.burn_tab import BurnTab
from rigcheck.tui.widgets.device_panel import DevicePanel
from rigcheck.tui.widgets.log_panel import LogPanel
from rigcheck.tui.widgets.results_panel import ResultsPanel
from rigcheck.tui.widgets.running_panel import RunningPanel
from rigcheck.tui.widgets.stages_panel import StagesPanel
from textual.css.query import NoMatches
from textual.widgets import TabbedContent

FIGURES_S = 0.5  # new figures go into their tables at most this often: each new row lays out the whole screen


def ended_words(run_id: int | None, status: str, cancelled: list[str]) -> str:
    """What the toast says at a run's end: a run whose stages were cancelled is not called complete."""
    if not cancelled:
        return f"run {run_id} {status}"
    return f"run {run_id} ended: {', '.join(cancelled)} cancelled" + (
        " (run cancelled)" if status == "cancelled" else ""
    )


class FollowRun:
    """The run-following half of the app; `self` is the RigcheckApp."""

    app: Any

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
            if event.status in (Status.FAIL, Status.CRASH, Status.TIMEOUT, Status.INCONCLUSIVE, Status.WARN):
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
            bench = self.panel(BenchPanel)
            first = bench.row_count == 0
            bench.add_measurements(figures)
            for figure in figures:
                results.add(measurement_row(figure))
            if first:
                self._focus_figures()
        self.set_timer(FIGURES_S, self._add_figures)

    def _focus_figures(self) -> None:
        """With a run's first figures, up, down and enter move through them and open one (as the line under them says),
        unless the user is elsewhere: another tab, another screen, a table of their choosing."""
        main = self._main_screen
        if self.screen is not main or self.panel(TabbedContent).active != "tab-running":
            return
        if main.focused is None or main.focused.id == "stages-table":
            self.panel(BenchPanel).focus()

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

    def _show_times(self) -> None:
        """The Stages panel's time line: the stage's and the run's elapsed time against earlier runs'."""
        run = (self.run_started, self.run_stages) if self.running and self.run_started is not None else None
        stage = (self.current_stage, self.stage_started) if self.current_stage and self.stage_started else None
        self.panel(StagesPanel).set_times(run, stage, time.time())
