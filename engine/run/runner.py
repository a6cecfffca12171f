"""Runs stages one after another, each in its own child process, under one supervisor thread per run.

A child that segfaults, aborts, is OOM-killed or hangs becomes a CRASH or TIMEOUT verdict; the
parent lives on and the next stage runs. The parent never imports torch. Starting a child is launch.py's job,
supervising a batch of them batch.py's; this module runs the stages in order and judges each one's figures.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from rigcheck.engine.events import (
    Event,
    Fingerprint,
    Measurement,
    RunFinished,
    RunStarted,
    StageFinished,
    Status,
    Verdict,
    worst,
)
from rigcheck.engine.exits import EXIT_ERROR
from rigcheck.engine.registry import StageInfo
from rigcheck.engine.report.failures import strict_code
from rigcheck.engine.run.batch import BatchRunner, Settled
from rigcheck.engine.run.launch import AHEAD_READY_S, Launcher
from rigcheck.engine.run.no_child import skip_reason
from rigcheck.engine.run.outcome import describe_death, exit_code_for, signal_name
from rigcheck.engine.run.plan import Child, RunPlan, stage_batches
from rigcheck.engine.run.warm_pool import WarmPool
from rigcheck.engine.stages.common.partials import remove_partials
from rigcheck.engine.trust.history import History
from rigcheck.engine.trust.settle import settle
from rigcheck.engine.trust.stage_judge import StageFigures, judge_stage

# kept importable from here: the front ends, the fleet and the tests name them as the runner's
__all__ = ["Child", "Run", "RunPlan", "describe_death", "exit_code_for", "signal_name", "stage_batches"]

Listener = Callable[[Event], None]
Annotator = Callable[[Measurement], Measurement]
BeforeStage = Callable[[StageInfo], Iterable[Event]]
BeforeEnd = Callable[[], Iterable[Event]]


class Run:
    """One run's supervisor: start() returns at once, events go to every listener from one thread."""

    def __init__(
        self,
        plan: RunPlan,
        listeners: Iterable[Listener] = (),
        annotate: Annotator | None = None,
        before_stage: BeforeStage | None = None,
        before_end: BeforeEnd | None = None,
    ) -> None:
        self.plan = plan
        self.listeners = list(listeners)
        self.annotate = annotate  # adds telemetry conditions to each measurement
        self.before_stage = before_stage  # e.g. the quiet-host check before throughput stages
        self.before_end = before_end  # e.g. what a long store lock made the run drop
        self.stage_status: dict[str, Status] = {}
        self.listener_errors: list[str] = []
        self.status = "pending"
        self.fingerprint: Fingerprint | None = None  # the run's: the first stage's
        self._stage_figures: list[Measurement] = []
        self._run_figures: list[Measurement] = []  # every stage's, for expectations that need another stage's figure
        # each figure's earlier clean values: set by the session, which has the store
        self.history: History | None = None
        self._stage_verdicts: list[Status] = []  # as settled in the parent
        self._run_verdicts: list[Status] = []  # every verdict of the run, for --strict
        self._restated = False  # a child's verdict was restated here: the stage's status comes from the settled ones
        self._cancel_stage = threading.Event()
        self._cancel_run = threading.Event()
        self.stop_reason = "cancelled by the user"  # what the stage that was stopped says
        self.not_run_reason = "not run: the run was cancelled"  # what each stage left unrun says
        self.cancelled_here = "not run: cancelled by the user"  # a stage or batch a cancel stopped before it began
        self.failed = False  # stopped by a failure (the store), not on request: the run ends `error`, exit 4
        self._done = threading.Event()  # not Thread.join: a Ctrl-C inside join() can break the next join
        self._thread = threading.Thread(target=self._supervise, name="rigcheck-run", daemon=True)
        self.warm = WarmPool()  # one warm stage child per device, unless the request says cold
        self.launcher = Launcher(plan, self.warm)
        self.batches = BatchRunner(self.launcher, self._emit, self._cancel_stage.is_set, lambda: self.stop_reason)

    # -- control, from any thread --
    def start(self) -> None:
        self._thread.start()

    def cancel_stage(self) -> None:
        self._cancel_stage.set()

    def stage_cancelled(self) -> bool:
        return self._cancel_stage.is_set()

    def cancel(self, reason: str = "") -> None:
        """Stop the run; `reason` replaces "cancelled by the user" in what the stopped stage and those left
        unrun say."""
        if reason:
            self.stop_reason, self.not_run_reason = reason, f"not run: {reason}"
            self.cancelled_here = self.not_run_reason
        self._cancel_run.set()
        self._cancel_stage.set()

    def fail(self, stopped: str, not_run: str) -> None:
        """Stop the run because something failed (the store could not be written), not on anyone's request: the
        stopped stage says `stopped`, each stage left unrun says `not_run`, and the run ends `error`, exit 4."""
        self.stop_reason, self.not_run_reason, self.cancelled_here, self.failed = stopped, not_run, not_run, True
        self._cancel_run.set()
        self._cancel_stage.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    @property
    def exit_code(self) -> int:
        """The run's exit code by the one rule: its stages' statuses, then --strict (report/failures.py)."""
        if self.failed:
            return EXIT_ERROR
        return strict_code(exit_code_for(self.stage_status.values()), self._run_verdicts, self.plan.request.strict)

    # -- the supervisor thread --
    def _emit(self, event: Event) -> None:
        if isinstance(event, Fingerprint):
            checked = self._check_fingerprint(event)
            if checked is None:
                return
            event = checked
        if isinstance(event, Measurement) and self.annotate is not None:
            event = self.annotate(event)
        if isinstance(event, Measurement):
            self._stage_figures.append(event)
            self._run_figures.append(event)
        if isinstance(event, Verdict):  # a child's verdict on a figure quotes the figure's one cause (trust.settle)
            settled = settle(event, self._stage_figures)
            self._restated = self._restated or settled.status != event.status
            event = settled
            self._stage_verdicts.append(event.status)
            self._run_verdicts.append(event.status)
        if isinstance(event, StageFinished):
            self.stage_status[event.stage] = event.status
        for listener in self.listeners:
            try:
                listener(event)
            except Exception as error:  # a broken display or a full disk must not stop the stages
                self.listener_errors.append(f"{type(error).__name__}: {error}")

    def _check_fingerprint(self, event: Fingerprint) -> Event | None:
        """The first stage's fingerprint is the run's; a later one that differs becomes a WARN naming what changed."""
        if self.fingerprint is None:
            self.fingerprint = event
            return event
        if event.digest == self.fingerprint.digest:
            return None
        before, after = self.fingerprint.basis, event.basis
        changed = [
            f"{key}: {before.get(key)!r} -> {after.get(key)!r}"
            for key in sorted(set(before) | set(after))
            if before.get(key) != after.get(key)
        ]
        return Verdict(
            event.stage,
            "environment",
            Status.WARN,
            f"the environment changed since the run began ({'; '.join(changed)[:400]}): "
            "this stage's figures and the earlier stages' are not comparable",
            {"run_fingerprint": self.fingerprint.digest, "stage_fingerprint": event.digest, "changed": changed},
        )

    def _supervise(self) -> None:
        try:
            self._supervise_stages()
        finally:
            self.warm.close_all()
            self._done.set()

    def _supervise_stages(self) -> None:
        plan, request = self.plan, self.plan.request
        self.status = "running"
        self._emit(RunStarted(plan.run_id, tuple(s.name for s in request.stages), request.device, request.profile))
        for index, info in enumerate(request.stages):
            if self._cancel_run.is_set():
                self._emit(Verdict(info.name, "stage", Status.SKIP, self.not_run_reason))
                self._emit(StageFinished(info.name, Status.SKIP))
                continue
            self._cancel_stage.clear()
            nothing = skip_reason(info, request)
            if nothing is not None:
                self._emit(Verdict(info.name, info.name, Status.SKIP, nothing, device=request.device))
                self._emit(StageFinished(info.name, Status.SKIP))
                continue
            if info.throughput:  # no import of rigcheck's own runs beside a figure
                self.warm.wait_ahead_ready(AHEAD_READY_S, self._cancel_stage.is_set)
            elif not request.cold:
                self.launcher.start_ahead(request.stages[index + 1 :])
            if self.before_stage is not None:
                for event in self.before_stage(info):
                    self._emit(event)
            if self._cancel_stage.is_set():  # cancelled while waiting for a quiet host: start no child
                self._emit(Verdict(info.name, "stage", Status.SKIP, self.cancelled_here))
                self._emit(StageFinished(info.name, Status.SKIP))
                continue
            self._run_one(info)
        if self.before_end is not None:
            for event in self.before_end():
                self._emit(event)
        self.status = "error" if self.failed else "cancelled" if self._cancel_run.is_set() else "complete"
        self._emit(RunFinished(plan.run_id, self.status, self.exit_code))

    def _run_one(self, info: StageInfo) -> None:
        plan = self.plan
        self._stage_figures, self._stage_verdicts, self._restated = [], [], False
        plan.log_dir.mkdir(parents=True, exist_ok=True)
        settled: list[Settled] = []
        for batch in stage_batches(info, plan):
            if settled and self._cancel_stage.is_set():
                for child in batch:  # batches a cancel left unrun say so, each for its device
                    self._emit(Verdict(info.name, "stage", Status.SKIP, self.cancelled_here, device=child.device))
                continue
            settled += self.batches.run(info, batch)
        remove_partials(plan.log_dir / "shared")  # half-written by a child that was killed: they only take room
        statuses = [s.status for s in settled]
        if self._restated:  # a child's FAIL restated INCONCLUSIVE must not fail the stage
            statuses = [s for s in statuses if s in (Status.CRASH, Status.TIMEOUT)] + self._stage_verdicts
        baseline = plan.request.options.get("baseline")  # --baseline: the user's own figures, not the model table
        given = StageFigures(
            info.name,
            self._stage_figures,
            frozenset(s.child.device for s in settled),
            plan.peer_tolerance,
            baseline if isinstance(baseline, dict) else None,
            self.history,
            self._run_figures,
        )
        for verdict in judge_stage(given):
            self._emit(verdict)
            statuses.append(verdict.status)
        status = worst(statuses) or Status.SKIP
        if self._cancel_stage.is_set() and status.severity <= Status.PASS.severity:
            status = Status.SKIP  # a cancelled stage is not a PASS because the children that finished passed
        first = settled[0]
        code = first.code if len(settled) == 1 else None
        self._emit(StageFinished(info.name, status, code, str(first.log_path)))
