"""One batch of a stage's children (one per device, run at once): started, their events forwarded as they come,
stopped on cancel or past the stage's time limit, and each settled into a status: its own, or a CRASH, TIMEOUT or
SKIP verdict that says why it did not finish (its signal, its last log lines)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection, wait
from pathlib import Path

from rigcheck.engine.events import Event, LogLine, Progress, StageFinished, Status, Verdict
from rigcheck.engine.exits import EXIT_OK
from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run.event_pipe import ForeignEvent, receive_event
from rigcheck.engine.run.launch import Launcher, Running
from rigcheck.engine.run.log_tail import log_tail
from rigcheck.engine.run.outcome import describe_death, signal_name
from rigcheck.engine.run.plan import Child

POLL_S = 0.1
TERM_GRACE_S = 3.0


@dataclass(frozen=True)
class Settled:
    """How one child of a batch ended: its status, its log and its exit code (None: it never started)."""

    child: Child
    status: Status
    log_path: Path
    code: int | None


class BatchRunner:
    """Runs the batches of one run's stages; `emit` takes each event, `cancelled` says the stage was cancelled, and
    `stop_reason` says what a stage cut off by that cancel says."""

    def __init__(
        self,
        launcher: Launcher,
        emit: Callable[[Event], None],
        cancelled: Callable[[], bool],
        stop_reason: Callable[[], str],
    ) -> None:
        self.launcher, self.plan, self.warm = launcher, launcher.plan, launcher.warm
        self.emit, self.cancelled, self.stop_reason = emit, cancelled, stop_reason

    def run(self, info: StageInfo, batch: list[Child]) -> list[Settled]:
        """Start every child of the batch, forward their events as they come, and settle each one."""
        request = self.plan.request
        limit = request.timeout_s or info.timeout(request.profile, request.options)
        settled: list[Settled] = []
        running = self._start(info, batch, settled)
        live = {r.conn: r for r in running}
        outcome = self._forward(info, batch, live, time.monotonic() + limit, limit)
        cut = [entry for entry in running if entry.conn in live]  # still running when cancelled or timed out
        for entry in cut:
            if entry.warm is not None:
                entry.warm.orders.close()  # so it leaves once SIGTERM has stopped its stage
        self._stop_all([entry.proc for entry in cut], dump_stack=outcome is not None and outcome[0] == Status.TIMEOUT)
        for entry in running:
            settled.append(self._settle(info, entry, entry in cut, outcome))
        return settled

    def _start(self, info: StageInfo, batch: list[Child], settled: list[Settled]) -> list[Running]:
        """The batch's children started; one that could not start is settled at once as a CRASH."""
        running: list[Running] = []
        for child in batch:
            log_path = child.log_path(self.plan.log_dir, info.name)
            try:
                running.append(self.launcher.start(info, child, log_path, self.cancelled))
            except OSError as error:
                why = f"could not start {self.plan.request.python}: {error}"
                self._child_failed(info.name, child, Status.CRASH, why, None, log_path)
                settled.append(Settled(child, Status.CRASH, log_path, None))
        return running

    def _forward(
        self, info: StageInfo, batch: list[Child], live: dict[Connection, Running], deadline: float, limit: float
    ) -> tuple[Status, str] | None:
        """Every live child's events, as they come, until each has finished or ended (`live` keeps those that did
        not); why the rest were cut off (cancelled, or past the time limit), or None."""
        while live:
            if self.cancelled():
                return (Status.SKIP, self.stop_reason())
            if time.monotonic() > deadline:
                return (Status.TIMEOUT, f"ran past its {limit:.0f} s limit and was killed")
            for conn in wait(list(live), timeout=POLL_S):
                entry = live[conn]  # type: ignore[index]
                try:
                    event = receive_event(conn)  # type: ignore[arg-type]
                except (EOFError, OSError):
                    del live[conn]  # type: ignore[arg-type]
                    continue
                except ForeignEvent as foreign:  # the child's plain() let something through: say so, go on
                    self.emit(LogLine(info.name, f"dropped an event holding {foreign}", level="error"))
                    continue
                if isinstance(event, StageFinished):
                    entry.finished = event
                    del live[conn]  # type: ignore[arg-type]  # its last event: a warm child stays, waiting
                    continue
                if isinstance(event, Progress) and len(batch) > 1:
                    event = replace(event, device=entry.child.device)
                self.emit(event)
            for conn, entry in list(live.items()):
                if entry.proc.poll() is not None and not conn.poll(0):
                    del live[conn]
        return None

    def _settle(self, info: StageInfo, entry: Running, cut_off: bool, outcome: tuple[Status, str] | None) -> Settled:
        """How one child ended: a warm child that finished goes back to the pool; one that did not finish gets
        its verdict (cut off: the outcome's; else a CRASH naming how it died)."""
        if entry.warm is not None and entry.key is not None and entry.finished is not None and not cut_off:
            self.warm.give_back(entry.key, entry.warm)  # ready for this device's next stage
            return Settled(entry.child, entry.finished.status, entry.log_path, EXIT_OK)
        entry.conn.close()
        if entry.warm is not None:
            entry.warm.orders.close()
        code = entry.proc.wait()
        if entry.finished is not None and not cut_off:
            return Settled(entry.child, entry.finished.status, entry.log_path, code)
        status, why = outcome if cut_off and outcome is not None else (Status.CRASH, describe_death(code))
        self._child_failed(info.name, entry.child, status, why, code, entry.log_path)
        return Settled(entry.child, status, entry.log_path, code)

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
        self.emit(Verdict(stage, "stage", status, explanation, numbers, device=where))
        if tail and status in (Status.CRASH, Status.TIMEOUT):
            self.emit(LogLine(stage, f"{status.value}: {why}\n{tail}", level="error"))

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
