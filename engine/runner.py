"""Runs stages one after another, each in its own child process, under one supervisor thread per run.

A child that segfaults, aborts, is OOM-killed or hangs becomes a CRASH or TIMEOUT verdict; the
parent lives on and the next stage runs. The parent never imports torch.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path

from .childpath import shim_dir
from .events import (
    Event,
    LogLine,
    Measurement,
    RunFinished,
    RunStarted,
    StageFinished,
    Status,
    Verdict,
)
from .registry import StageInfo
from .stage import StageSpec

Listener = Callable[[Event], None]
Annotator = Callable[[Measurement], Measurement]
BeforeStage = Callable[[StageInfo], Iterable[Event]]

POLL_S = 0.1
TERM_GRACE_S = 3.0
LOG_TAIL_LINES = 12
SIGNAL_HINTS = {
    "SIGKILL": " (often the kernel's out-of-memory killer)",
    "SIGSEGV": " (a segmentation fault, usually inside a GPU runtime or a native library)",
    "SIGABRT": " (a native library called abort())",
    "SIGBUS": " (a bus error: bad memory mapping)",
}


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


def exit_code_for(statuses: Iterable[Status]) -> int:
    """0 when all is PASS/WARN/SKIP, 1 on any FAIL, 3 on any CRASH or TIMEOUT."""
    found = set(statuses)
    if found & {Status.CRASH, Status.TIMEOUT}:
        return 3
    if Status.FAIL in found:
        return 1
    return 0


@dataclass
class RunPlan:
    """What one run will do: which stages, on what, with which interpreter, and where logs go."""

    run_id: int
    stages: list[StageInfo]
    device: str = "cpu"
    profile: str = "standard"
    python: str = sys.executable
    log_dir: Path = Path(".")
    options: dict[str, object] = field(default_factory=dict)
    timeout_s: float | None = None


class Run:
    """One run's supervisor: start() returns at once, events go to every listener from one thread."""

    def __init__(
        self,
        plan: RunPlan,
        listeners: Iterable[Listener] = (),
        annotate: Annotator | None = None,
        before_stage: BeforeStage | None = None,
    ) -> None:
        self.plan = plan
        self.listeners = list(listeners)
        self.annotate = annotate  # adds telemetry conditions to each measurement
        self.before_stage = before_stage  # e.g. the quiet-host check before throughput stages
        self.stage_status: dict[str, Status] = {}
        self.listener_errors: list[str] = []
        self.status = "pending"
        self._cancel_stage = threading.Event()
        self._cancel_run = threading.Event()
        self._done = threading.Event()  # not Thread.join: a Ctrl-C inside join() can break the next join
        self._thread = threading.Thread(target=self._supervise, name="rigcheck-run", daemon=True)

    # -- control, from any thread --
    def start(self) -> None:
        self._thread.start()

    def cancel_stage(self) -> None:
        self._cancel_stage.set()

    def cancel(self) -> None:
        self._cancel_run.set()
        self._cancel_stage.set()

    def wait(self, timeout: float | None = None) -> bool:
        return self._done.wait(timeout)

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.stage_status.values())

    # -- the supervisor thread --
    def _emit(self, event: Event) -> None:
        if isinstance(event, Measurement) and self.annotate is not None:
            event = self.annotate(event)
        if isinstance(event, StageFinished):
            self.stage_status[event.stage] = event.status
        for listener in self.listeners:
            try:
                listener(event)
            except Exception as error:  # a broken display or a full disk must not stop the stages
                self.listener_errors.append(f"{type(error).__name__}: {error}")

    def _supervise(self) -> None:
        try:
            self._supervise_stages()
        finally:
            self._done.set()

    def _supervise_stages(self) -> None:
        plan = self.plan
        self.status = "running"
        self._emit(RunStarted(plan.run_id, tuple(s.name for s in plan.stages), plan.device, plan.profile))
        for info in plan.stages:
            if self._cancel_run.is_set():
                self._emit(Verdict(info.name, "stage", Status.SKIP, "not run: the run was cancelled"))
                self._emit(StageFinished(info.name, Status.SKIP))
                continue
            self._cancel_stage.clear()
            if self.before_stage is not None:
                for event in self.before_stage(info):
                    self._emit(event)
            self._run_one(info)
        self.status = "cancelled" if self._cancel_run.is_set() else "complete"
        self._emit(RunFinished(plan.run_id, self.status, self.exit_code))

    def _spawn(self, info: StageInfo, log_path: Path) -> tuple[subprocess.Popen[bytes], Connection]:
        plan = self.plan
        spec = StageSpec(info.name, plan.device, plan.profile, tuple(sorted(plan.options.items())))
        spec_json = json.dumps(
            {
                "stage": spec.stage,
                "device": spec.device,
                "profile": spec.profile,
                "options": spec.options,
                "fingerprint": info.fingerprint,
            }
        )
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        paths = [str(shim_dir()), *info.extra_paths]
        if env.get("PYTHONPATH"):
            paths.append(env["PYTHONPATH"])
        env.update(PYTHONPATH=os.pathsep.join(paths), PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1")
        with open(log_path, "ab") as log:
            proc = subprocess.Popen(
                [plan.python, "-m", "rigcheck.engine.child", str(write_fd), spec_json, info.target],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(write_fd,),
                env=env,
                start_new_session=True,  # a terminal Ctrl-C reaches the parent, which stops the child
            )
        os.close(write_fd)  # or the parent never sees EOF
        return proc, Connection(read_fd, writable=False)

    def _run_one(self, info: StageInfo) -> None:
        plan = self.plan
        log_path = plan.log_dir / f"{info.name}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        limit = plan.timeout_s or info.timeout(plan.profile, plan.options)
        try:
            proc, conn = self._spawn(info, log_path)
        except OSError as error:
            self._finish(info.name, Status.CRASH, f"could not start {plan.python}: {error}", None, log_path)
            return
        deadline = time.monotonic() + limit
        finished: StageFinished | None = None
        outcome: tuple[Status, str] | None = None
        with conn:
            while True:
                if self._cancel_stage.is_set():
                    self._stop(proc, conn)
                    outcome = (Status.SKIP, "cancelled by the user")
                    break
                if time.monotonic() > deadline:
                    self._stop(proc, conn, dump_stack=True)
                    outcome = (Status.TIMEOUT, f"ran past its {limit:.0f} s limit and was killed")
                    break
                try:
                    if not conn.poll(POLL_S):
                        if proc.poll() is not None and not conn.poll(0):
                            break
                        continue
                    event = conn.recv()
                except (EOFError, OSError):
                    break
                if isinstance(event, StageFinished):
                    finished = event
                    continue
                self._emit(event)
        code = proc.wait()
        if outcome is None and finished is not None:
            self._emit(StageFinished(info.name, finished.status, code, str(log_path)))
            return
        if outcome is None:
            outcome = (Status.CRASH, describe_death(code))
        self._finish(info.name, outcome[0], outcome[1], code, log_path)

    def _finish(self, stage: str, status: Status, why: str, code: int | None, log_path: Path) -> None:
        tail = log_tail(log_path)
        explanation = why + (f"; last log lines:\n{tail}" if tail and status != Status.SKIP else "")
        numbers: dict[str, object] = {"exit_code": code, "log": str(log_path)}
        if code is not None and code < 0:
            numbers["signal"] = signal_name(code)
        self._emit(Verdict(stage, "stage", status, explanation, numbers, device=self.plan.device))
        if tail and status in (Status.CRASH, Status.TIMEOUT):
            self._emit(LogLine(stage, f"{status.value}: {why}\n{tail}", level="error"))
        self._emit(StageFinished(stage, status, code, str(log_path)))

    def _stop(self, proc: subprocess.Popen[bytes], conn: Connection, dump_stack: bool = False) -> None:
        """Ask the child to stop (SIGTERM sets its cancel flag), then kill it after a grace period."""
        if proc.poll() is not None:
            return
        try:
            if dump_stack:
                os.kill(proc.pid, signal.SIGUSR1)  # faulthandler writes every thread's stack to the log
                time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            proc.wait(TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            proc.kill()
        except ProcessLookupError:
            pass
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
