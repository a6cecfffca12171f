"""Runs stages one after another, each in its own child process, under one supervisor thread per run.

A child that segfaults, aborts, is OOM-killed or hangs becomes a CRASH or TIMEOUT verdict; the
parent lives on and the next stage runs. The parent never imports torch.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path

from rigcheck.engine.events import (
    Event,
    Fingerprint,
    LogLine,
    Measurement,
    Progress,
    RunFinished,
    RunStarted,
    StageFinished,
    Status,
    Verdict,
    worst,
)
from rigcheck.engine.exits import EXIT_CRASH, EXIT_ERROR, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_OK
from rigcheck.engine.measure.speedup import gpu_over_cpu
from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run.childpath import absolute_program
from rigcheck.engine.run.event_pipe import ForeignEvent, receive_event
from rigcheck.engine.run.log_tail import log_tail
from rigcheck.engine.run.no_child import skip_reason
from rigcheck.engine.run.order import StageOrder
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.warm_pool import (
    WarmChild,
    WarmKey,
    WarmPool,
    adopt_parked,
    child_environment,
    start_warm,
)
from rigcheck.engine.stage import SHARED_DIR_ENV, StageSpec
from rigcheck.engine.stages.common.partials import remove_partials
from rigcheck.engine.trust.expectations import expectation_verdicts
from rigcheck.engine.trust.history import History
from rigcheck.engine.trust.peers import PEER_TOLERANCE, peer_verdicts
from rigcheck.engine.trust.reference import reference_verdicts
from rigcheck.engine.trust.settle import settle

Listener = Callable[[Event], None]
Annotator = Callable[[Measurement], Measurement]
BeforeStage = Callable[[StageInfo], Iterable[Event]]
BeforeEnd = Callable[[], Iterable[Event]]

POLL_S = 0.1
TERM_GRACE_S = 3.0
AHEAD_READY_S = 120.0  # a child started ahead that has not imported torch by then is closed; its stage starts one
SIGNAL_HINTS = {
    "SIGKILL": " (often the kernel's out-of-memory killer)",
    "SIGSEGV": " (a segmentation fault, usually inside a GPU runtime or a native library)",
    "SIGABRT": " (a native library called abort())",
    "SIGBUS": " (a bus error: bad memory mapping)",
}


def exit_code_for(statuses: Iterable[Status]) -> int:
    """0 when all is PASS/NOT JUDGED/WARN/SKIP, 1 on any FAIL, 3 on any CRASH or TIMEOUT, else 7 on any
    INCONCLUSIVE (a figure that could not be judged is neither a PASS nor a FAIL)."""
    found = set(statuses)
    if found & {Status.CRASH, Status.TIMEOUT}:
        return EXIT_CRASH
    if Status.FAIL in found:
        return EXIT_FAIL
    if Status.INCONCLUSIVE in found:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


@dataclass(frozen=True)
class RunPlan:
    """One request as the runner carries it out: the request itself, the run's id in the store and its log folder."""

    run_id: int
    request: RunRequest
    log_dir: Path = Path(".")

    @property
    def peer_tolerance(self) -> float:
        """The request's tolerance between peer GPUs, else the runner's default."""
        tolerance = self.request.peer_tolerance
        return PEER_TOLERANCE if tolerance is None else tolerance


@dataclass(frozen=True)
class Child:
    """One stage child: the device it measures, options added to the run's, and its log file's name."""

    device: str
    options: tuple[tuple[str, object], ...] = ()
    log_suffix: str = ""

    def log_path(self, log_dir: Path, stage: str) -> Path:
        return log_dir / f"{stage}{self.log_suffix}.log"


def stage_batches(info: StageInfo, plan: RunPlan) -> list[list[Child]]:
    """The children of one stage, in batches run one after another; the children of a batch run at once.

    A per-device stage on several GPUs gets one child per GPU (all at once, or one by one with
    `serial`), then, where it has host work that does not depend on the GPU, one CPU child after them.
    """
    request = plan.request
    if not (info.per_device and len(request.gpus) > 1):
        return [[Child(request.device)]]
    gpus = [Child(gpu, (("parts", "gpu"),), "-" + gpu.replace(":", "")) for gpu in request.gpus]
    batches = [[child] for child in gpus] if request.serial else [gpus]
    if info.cpu_part:
        batches.append([Child("cpu", (("parts", "cpu"),), "-cpu")])
    return batches


@dataclass
class _Running:
    child: Child
    proc: subprocess.Popen[bytes]
    conn: Connection
    log_path: Path
    warm: WarmChild | None = None
    key: WarmKey | None = None
    finished: StageFinished | None = None


@dataclass(frozen=True)
class _Settled:
    child: Child
    status: Status
    log_path: Path
    code: int | None


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
        self._restated = False  # a child's verdict was restated here: the stage's status comes from the settled ones
        self._cancel_stage = threading.Event()
        self._cancel_run = threading.Event()
        self.stop_reason = "cancelled by the user"  # what the stage that was stopped says
        self.not_run_reason = "not run: the run was cancelled"  # what each stage left unrun says
        self.failed = False  # stopped by a failure (the store), not on request: the run ends `error`, exit 4
        self._done = threading.Event()  # not Thread.join: a Ctrl-C inside join() can break the next join
        self._thread = threading.Thread(target=self._supervise, name="rigcheck-run", daemon=True)
        self.warm = WarmPool()  # one warm stage child per device, unless the request says cold

    # -- control, from any thread --
    def start(self) -> None:
        self._thread.start()

    def cancel_stage(self) -> None:
        self._cancel_stage.set()

    def stage_cancelled(self) -> bool:
        return self._cancel_stage.is_set()

    def cancel(self, reason: str = "") -> None:
        """Stop the run; `reason` replaces "cancelled by the user" in what the stopped stage says."""
        if reason:
            self.stop_reason = reason
        self._cancel_run.set()
        self._cancel_stage.set()

    def fail(self, stopped: str, not_run: str) -> None:
        """Stop the run because something failed (the store could not be written), not on anyone's request: the
        stopped stage says `stopped`, each stage left unrun says `not_run`, and the run ends `error`, exit 4."""
        self.stop_reason, self.not_run_reason, self.failed = stopped, not_run, True
        self._cancel_run.set()
        self._cancel_stage.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    @property
    def exit_code(self) -> int:
        if self.failed:
            return EXIT_ERROR
        return exit_code_for(self.stage_status.values())

    # -- the supervisor thread --
    def _emit(self, event: Event) -> None:
        if isinstance(event, Fingerprint):
            event = self._check_fingerprint(event)
            if event is None:
                return
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
                self._start_ahead(request.stages[index + 1 :])
            if self.before_stage is not None:
                for event in self.before_stage(info):
                    self._emit(event)
            if self._cancel_stage.is_set():  # cancelled while waiting for a quiet host: start no child
                why = self.not_run_reason if self.failed else "not run: cancelled by the user"
                self._emit(Verdict(info.name, "stage", Status.SKIP, why))
                self._emit(StageFinished(info.name, Status.SKIP))
                continue
            self._run_one(info)
        if self.before_end is not None:
            for event in self.before_end():
                self._emit(event)
        self.status = "error" if self.failed else "cancelled" if self._cancel_run.is_set() else "complete"
        self._emit(RunFinished(plan.run_id, self.status, self.exit_code))

    def _start_ahead(self, later: Iterable[StageInfo]) -> None:
        """Start the children of the next stage that runs in fresh interpreters now, while this stage (one that
        measures no throughput) runs: they import torch beside it and wait, idle, until their stage comes."""
        plan, request = self.plan, self.plan.request
        fresh = next((info for info in later if info.fresh_child and skip_reason(info, request) is None), None)
        if fresh is None:
            return
        plan.log_dir.mkdir(parents=True, exist_ok=True)
        program, folder, env = absolute_program(request.python), plan.log_dir.absolute(), self._child_env(fresh)
        for batch in stage_batches(fresh, plan):
            for child in batch:
                log_path = child.log_path(plan.log_dir, fresh.name)
                self.warm.start_ahead(
                    fresh.name,
                    self._warm_key(fresh, child),
                    lambda log_path=log_path: start_warm(program, env, folder, log_path, "ready"),
                )

    def _warm_key(self, info: StageInfo, child: Child) -> WarmKey:
        """Which warm child may run this stage's child: the same interpreter, device and extra import paths."""
        return (self.plan.request.python, child.device, info.extra_paths)

    def _order(self, info: StageInfo, child: Child, log_path: Path) -> StageOrder:
        request = self.plan.request
        options = dict(request.options) | dict(child.options)
        spec = StageSpec(info.name, child.device, request.profile, tuple(sorted(options.items())))
        return StageOrder(spec, info.target, info.fingerprint, str(log_path.absolute()), self._shared_dir())

    def _child_env(self, info: StageInfo) -> dict[str, str]:
        env = child_environment(*info.extra_paths)
        env[SHARED_DIR_ENV] = self._shared_dir()  # host work done once, read by every GPU's child
        return env

    def _shared_dir(self) -> str:
        return str(self.plan.log_dir.absolute() / "shared")

    def _warm_child(self, info: StageInfo, child: Child, log_path: Path) -> tuple[WarmChild, WarmKey]:
        """The device's warm child with this stage's order sent; a fresh one where none is idle or it died."""
        request = self.plan.request
        key = self._warm_key(info, child)
        order = self._order(info, child, log_path)
        warm = self.warm.take(key)
        if warm is None and not info.extra_paths:
            warm = adopt_parked(request.python)  # started before the preflight, importing torch beside it
        if warm is not None and warm.send(order):
            return warm, key
        if warm is not None:
            warm.close(0.0)
        program = absolute_program(request.python)
        warm = start_warm(program, self._child_env(info), self.plan.log_dir.absolute(), log_path)
        self.warm.started += 1
        if not warm.send(order):
            code = warm.close(0.0)
            raise OSError(f"the child exited at once (code {code})")
        return warm, key

    def _ahead_child(self, info: StageInfo, child: Child, log_path: Path) -> WarmChild | None:
        """The child started ahead for this stage and device, with the stage's order sent; None where there is
        none or it could not take the order (the stage then starts a fresh one, as without it)."""
        ahead = self.warm.take_ahead(info.name, self._warm_key(info, child), AHEAD_READY_S, self._cancel_stage.is_set)
        if ahead is not None and ahead.send(self._order(info, child, log_path)):
            return ahead
        if ahead is not None:
            ahead.close(0.0)
        return None

    def _spawn(self, info: StageInfo, child: Child, log_path: Path) -> tuple[subprocess.Popen[bytes], Connection]:
        plan, request = self.plan, self.plan.request
        order = self._order(info, child, log_path)
        read_fd, write_fd = os.pipe()
        log_dir = plan.log_dir.absolute()  # the child's folder: `-m` imports from it, so never the caller's
        env = self._child_env(info)
        with open(os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as log:  # owner only
            proc = subprocess.Popen(
                [absolute_program(request.python), "-m", "rigcheck.engine.run.child", str(write_fd), order.to_json()],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(write_fd,),
                env=env,
                cwd=log_dir,
                start_new_session=True,  # a terminal Ctrl-C reaches the parent, which stops the child
            )
        os.close(write_fd)  # or the parent never sees EOF
        return proc, Connection(read_fd, writable=False)

    def _run_one(self, info: StageInfo) -> None:
        plan = self.plan
        self._stage_figures, self._stage_verdicts, self._restated = [], [], False
        plan.log_dir.mkdir(parents=True, exist_ok=True)
        settled: list[_Settled] = []
        for batch in stage_batches(info, plan):
            if settled and self._cancel_stage.is_set():
                why = self.not_run_reason if self.failed else "not run: cancelled by the user"
                for child in batch:  # batches a cancel left unrun say so, each for its device
                    self._emit(Verdict(info.name, "stage", Status.SKIP, why, device=child.device))
                continue
            settled += self._run_batch(info, batch)
        remove_partials(plan.log_dir / "shared")  # half-written by a child that was killed: they only take room
        statuses = [s.status for s in settled]
        if self._restated:  # a child's FAIL restated INCONCLUSIVE must not fail the stage
            statuses = [s for s in statuses if s in (Status.CRASH, Status.TIMEOUT)] + self._stage_verdicts
        if len({s.child.device for s in settled}) > 1:
            analyses = [*peer_verdicts(self._stage_figures, info.name, plan.peer_tolerance)]
            if any(s.child.device == "cpu" for s in settled):
                analyses += gpu_over_cpu(self._stage_figures, info.name)
            for verdict in analyses:
                self._emit(verdict)
                statuses.append(verdict.status)
        baseline = plan.request.options.get("baseline")  # --baseline: the user's own figures, not the model table
        for verdict in reference_verdicts(
            self._stage_figures, info.name, baseline if isinstance(baseline, dict) else None
        ):
            self._emit(verdict)
            statuses.append(verdict.status)
        for verdict in expectation_verdicts(  # issue 32: links, history, and what had no reference
            self._stage_figures,
            info.name,
            baseline if isinstance(baseline, dict) else None,
            self.history,
            run_figures=self._run_figures,
        ):
            self._emit(verdict)
            statuses.append(verdict.status)
        status = worst(statuses) or Status.SKIP
        if self._cancel_stage.is_set() and status.severity <= Status.PASS.severity:
            status = Status.SKIP  # a cancelled stage is not a PASS because the children that finished passed
        first = settled[0]
        code = first.code if len(settled) == 1 else None
        self._emit(StageFinished(info.name, status, code, str(first.log_path)))

    def _run_batch(self, info: StageInfo, batch: list[Child]) -> list[_Settled]:
        """Start every child of the batch, forward their events as they come, and settle each one."""
        plan, request = self.plan, self.plan.request
        limit = request.timeout_s or info.timeout(request.profile, request.options)
        settled: list[_Settled] = []
        running: list[_Running] = []
        for child in batch:
            log_path = child.log_path(plan.log_dir, info.name)
            try:
                ahead = self._ahead_child(info, child, log_path) if info.fresh_child and not request.cold else None
                if ahead is not None:  # no key: it runs this one stage and leaves
                    running.append(_Running(child, ahead.proc, ahead.events, log_path, ahead))
                elif request.cold or info.fresh_child:
                    proc, conn = self._spawn(info, child, log_path)
                    running.append(_Running(child, proc, conn, log_path))
                else:
                    warm, key = self._warm_child(info, child, log_path)
                    running.append(_Running(child, warm.proc, warm.events, log_path, warm, key))
            except OSError as error:
                why = f"could not start {request.python}: {error}"
                self._child_failed(info.name, child, Status.CRASH, why, None, log_path)
                settled.append(_Settled(child, Status.CRASH, log_path, None))
                continue
        deadline = time.monotonic() + limit
        live = {r.conn: r for r in running}
        outcome: tuple[Status, str] | None = None
        while live:
            if self._cancel_stage.is_set():
                outcome = (Status.SKIP, self.stop_reason)
                break
            if time.monotonic() > deadline:
                outcome = (Status.TIMEOUT, f"ran past its {limit:.0f} s limit and was killed")
                break
            for conn in wait(list(live), timeout=POLL_S):
                entry = live[conn]  # type: ignore[index]
                try:
                    event = receive_event(conn)  # type: ignore[arg-type]
                except (EOFError, OSError):
                    del live[conn]  # type: ignore[arg-type]
                    continue
                except ForeignEvent as foreign:  # the child's plain() let something through: say so, go on
                    self._emit(LogLine(info.name, f"dropped an event holding {foreign}", level="error"))
                    continue
                if isinstance(event, StageFinished):
                    entry.finished = event
                    del live[conn]  # type: ignore[arg-type]  # its last event: a warm child stays, waiting
                    continue
                if isinstance(event, Progress) and len(batch) > 1:
                    event = replace(event, device=entry.child.device)
                self._emit(event)
            for conn, entry in list(live.items()):
                if entry.proc.poll() is not None and not conn.poll(0):
                    del live[conn]
        cut = [entry for entry in running if entry.conn in live]  # still running when cancelled or timed out
        for entry in cut:
            if entry.warm is not None:
                entry.warm.orders.close()  # so it leaves once SIGTERM has stopped its stage
        self._stop_all([entry.proc for entry in cut], dump_stack=outcome is not None and outcome[0] == Status.TIMEOUT)
        for entry in running:
            cut_off = entry in cut
            if entry.warm is not None and entry.key is not None and entry.finished is not None and not cut_off:
                self.warm.give_back(entry.key, entry.warm)  # ready for this device's next stage
                settled.append(_Settled(entry.child, entry.finished.status, entry.log_path, EXIT_OK))
                continue
            entry.conn.close()
            if entry.warm is not None:
                entry.warm.orders.close()
            code = entry.proc.wait()
            if entry.finished is not None and not cut_off:
                settled.append(_Settled(entry.child, entry.finished.status, entry.log_path, code))
                continue
            status, why = outcome if cut_off and outcome is not None else (Status.CRASH, describe_death(code))
            self._child_failed(info.name, entry.child, status, why, code, entry.log_path)
            settled.append(_Settled(entry.child, status, entry.log_path, code))
        return settled

    def _child_failed(
        self, stage: str, child: Child, status: Status, why: str, code: int | None, log_path: Path
    ) -> None:
        """The verdict (and log line) for a child that did not finish its stage; the caller emits StageFinished."""
        tail = log_tail(log_path)
        explanation = why + (f"; last log lines:\n{tail}" if tail and status != Status.SKIP else "")
        numbers: dict[str, object] = {"exit_code": code, "log": str(log_path)}
        if code is not None and code < 0:
            numbers["signal"] = signal_name(code)
        request = self.plan.request
        where = child.device if len(request.gpus) > 1 else request.device
        self._emit(Verdict(stage, "stage", status, explanation, numbers, device=where))
        if tail and status in (Status.CRASH, Status.TIMEOUT):
            self._emit(LogLine(stage, f"{status.value}: {why}\n{tail}", level="error"))

    def _stop_all(self, procs: list[subprocess.Popen[bytes]], dump_stack: bool = False) -> None:
        """Ask every child to stop at once (SIGTERM sets its cancel flag), then kill those still there
        after one shared grace period: eight GPUs stop in the time of one."""
        alive = [proc for proc in procs if proc.poll() is None]
        if not alive:
            return
        if dump_stack:
            for proc in alive:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGUSR1)  # faulthandler writes every thread's stack to the log
            time.sleep(0.3)
        for proc in alive:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + TERM_GRACE_S
        for proc in alive:
            try:
                proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
        for proc in alive:
            proc.wait()


def signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def describe_death(code: int) -> str:
    if code < 0:
        name = signal_name(code)
        return f"the stage child died of {name}{SIGNAL_HINTS.get(name, '')}"
    if code == 0:
        return "the stage child exited without reporting that it finished"
    return f"the stage child exited with code {code} before finishing"
