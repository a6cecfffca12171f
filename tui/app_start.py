"""Starting a run from the app, cancelling its stage, and quitting with a run live (leave it running, or stop it).

A mixin of RigcheckApp (tui/app.py); `self` is the app.
"""

from __future__ import annotations

from typing import Any

from rigcheck.engine.exits import EXIT_INTERRUPTED
from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run.cancel import Queued
from rigcheck.engine.run.control import ControlError
from rigcheck.engine.run.detach import StartFailed
from rigcheck.engine.run.request import RunRequest
from rigcheck.tui.run_link import RunLink
from rigcheck.tui.screens.confirm_quit import ConfirmQuit
from rigcheck.tui.serve_runs import note_run
from rigcheck.tui.widgets.log_panel import LogPanel


class StartStop:
    app: Any

    @property
    def running(self) -> bool:
        return self.link is not None

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
        note_run(link.run_id)  # in a `serve` tab: serve stops it when it stops
        self._attach(link, [i.name for i in infos])

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
