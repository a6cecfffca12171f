"""What a run started from the app would use: the device (as torch sees the GPUs, telemetry's guess until it
answers) and the profile, shown in the Stages panel's title with each stage's earlier time there.

A mixin of RigcheckApp (tui/app.py); `self` is the app.
"""

from __future__ import annotations

from typing import Any

from rigcheck.engine.stage import PROFILES
from rigcheck.tui.gpu_answer import GpusAnswered
from rigcheck.tui.widgets.log_panel import LogPanel
from rigcheck.tui.widgets.stages_panel import StagesPanel


class RunChoice:
    app: Any

    @property
    def gpus(self) -> tuple[str, ...]:
        """The GPUs a run may use: as torch answered, else as telemetry counts them."""
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
