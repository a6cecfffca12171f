"""The runner's warm stage children: one per device (and interpreter), kept from one stage to the next.

Each stage in a fresh interpreter pays for `import torch` and a GPU context, about 3 s; a warm child pays
once. Crash isolation stays: a child that crashes, times out or is cancelled is thrown away, its stage
gets its CRASH/TIMEOUT/SKIP as before, and the next stage on that device starts a fresh one.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from rigcheck.engine.run.childpath import EARLY_PREFIX, absolute_program, child_env, shim_dir
from rigcheck.engine.run.order import READY, StageOrder

CLOSE_GRACE_S = 5.0  # an idle child leaves at once when its orders pipe closes; this is for a busy one
READY_POLL_S = 0.2  # how often a wait for a child started ahead looks whether it should stop waiting

WarmKey = tuple[str, str, tuple[str, ...]]  # (interpreter, device, extra import paths)


@dataclass
class WarmChild:
    """One warm child: its process, the pipe its orders go down, and the pipe its events come up."""

    proc: subprocess.Popen[bytes]
    orders: Connection
    events: Connection
    stages_run: int = 0
    ready: bool = True  # False for a child started ahead until it says it has imported what its stage will

    def wait_ready(self, timeout_s: float, stop: Callable[[], bool] = lambda: False) -> bool:
        """For a child started ahead: wait (at most `timeout_s`, and only until `stop()`) for its READY; False
        where it died, is late or the wait was stopped."""
        deadline = time.monotonic() + timeout_s
        try:
            while not self.ready and not stop():
                if self.events.poll(min(READY_POLL_S, max(0.0, deadline - time.monotonic()))):
                    self.ready = self.events.recv_bytes(64) == READY
                    break
                if time.monotonic() >= deadline:
                    break
        except (EOFError, OSError):
            return False
        return self.ready and self.alive()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, order: StageOrder) -> bool:
        """Hand the child its next stage; False where it is gone (it died between stages)."""
        if not self.alive():
            return False
        try:
            self.orders.send_bytes(order.to_json().encode())
        except OSError:
            return False
        self.stages_run += 1
        return True

    def close(self, grace_s: float = CLOSE_GRACE_S) -> int | None:
        """Ask it to leave (end of its orders), kill it after the grace; its exit code."""
        with contextlib.suppress(OSError):
            self.orders.close()
        try:
            code = self.proc.wait(grace_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, signal.SIGKILL)
            code = self.proc.wait()
        with contextlib.suppress(OSError):
            self.events.close()
        return code


def start_warm(program: str, env: dict[str, str], cwd: Path, first_log: Path, first: str = "") -> WarmChild:
    """Start a warm child; until its first order its output goes to `first_log` (the first stage's log).
    `first` "answer": it imports torch at once and answers the preflight's question first (torch_question);
    "ready": it imports what a stage would at once, and says READY (a child started ahead of its stage)."""
    order_read, order_write = os.pipe()
    event_read, event_write = os.pipe()
    try:
        with open(os.open(first_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as log:
            proc = subprocess.Popen(
                [
                    program,
                    "-m",
                    "rigcheck.engine.run.child",
                    "--warm",
                    str(order_read),
                    str(event_write),
                    *([first] if first else []),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(order_read, event_write),
                env=env,
                cwd=cwd,
                start_new_session=True,  # a terminal Ctrl-C reaches the parent, which stops the child
            )
    except BaseException:
        for fd in (order_write, event_read):
            os.close(fd)
        raise
    finally:
        os.close(order_read)  # or the child never sees the end of its orders
        os.close(event_write)  # or the parent never sees EOF when the child dies
    return WarmChild(
        proc, Connection(order_write, readable=False), Connection(event_read, writable=False), ready=first != "ready"
    )


class WarmPool:
    """The warm children of one run, by key; the runner takes one for a stage and gives it back or drops it.

    Beside them, children started ahead for one stage each (a stage that must run in a fresh interpreter):
    they import torch while earlier stages that measure no throughput run, then wait, idle, for their order.
    """

    def __init__(self) -> None:
        self._idle: dict[WarmKey, WarmChild] = {}
        self._ahead: dict[tuple[str, WarmKey], WarmChild] = {}
        self.started = 0
        self.started_ahead = 0

    def start_ahead(self, stage: str, key: WarmKey, start: Callable[[], WarmChild]) -> None:
        """Start `stage`'s child for `key` now, unless one is already there; a child that cannot start is not."""
        if (stage, key) in self._ahead:
            return
        try:
            self._ahead[(stage, key)] = start()
        except OSError:
            return
        self.started_ahead += 1

    def take_ahead(
        self, stage: str, key: WarmKey, timeout_s: float, stop: Callable[[], bool] = lambda: False
    ) -> WarmChild | None:
        """The child started ahead for `stage` and `key`, once ready; None where there is none, or it died,
        was not ready in time or `stop()` came first (it is then closed; the stage starts one as it would have)."""
        child = self._ahead.pop((stage, key), None)
        if child is not None and not child.wait_ready(timeout_s, stop):
            child.close(0.0)
            return None
        return child

    def wait_ahead_ready(self, timeout_s: float, stop: Callable[[], bool] = lambda: False) -> None:
        """Wait until every child started ahead has finished its imports (or died), so that no import of
        rigcheck's own runs beside a figure; one still importing after `timeout_s`, or when `stop()`, is closed."""
        deadline = time.monotonic() + timeout_s
        for slot, child in list(self._ahead.items()):
            if not child.wait_ready(max(0.0, deadline - time.monotonic()), stop):
                child.close(0.0)
                del self._ahead[slot]

    def take(self, key: WarmKey) -> WarmChild | None:
        """The idle warm child for this key, if one is there and alive; it is the caller's until given back."""
        child = self._idle.pop(key, None)
        if child is not None and not child.alive():
            child.close(0.0)
            return None
        return child

    def give_back(self, key: WarmKey, child: WarmChild) -> None:
        old = self._idle.pop(key, None)
        if old is not None:
            old.close()
        self._idle[key] = child

    def close_all(self) -> None:
        """End every idle child and every child started ahead: close all their orders at once, then wait."""
        children = [*self._idle.values(), *self._ahead.values()]
        self._idle.clear()
        self._ahead.clear()
        for child in children:
            with contextlib.suppress(OSError):
                child.orders.close()
        deadline = time.monotonic() + CLOSE_GRACE_S
        for child in children:
            child.close(max(0.0, deadline - time.monotonic()))


_parked: dict[str, tuple[WarmChild, Path]] = {}  # by interpreter: started before the run knew its device
_answers: dict[str, str | None] = {}  # by interpreter: what its parked child answered the preflight


def child_environment(*extra_paths: str) -> dict[str, str]:
    """A stage child's environment: this engine first on its path, output unbuffered, faults traced."""
    env = child_env(str(shim_dir()), *extra_paths)
    env.update(PYTHONUNBUFFERED="1", PYTHONFAULTHANDLER="1")
    return env


def park_early(python: str) -> None:
    """Start a warm child for `python` now, importing torch while the preflight asks `python` about its GPUs;
    the run adopts it for its first stage. Never fails: a child that could not start is simply not there."""
    if python in _parked:
        return
    # an empty folder (`-m` imports from it), named with our pid so childpath.sweep_stale removes it after a kill -9
    folder = Path(tempfile.mkdtemp(prefix=f"{EARLY_PREFIX}{os.getpid()}-"))
    try:
        child = start_warm(absolute_program(python), child_environment(), folder, folder / "early.log", "answer")
    except OSError:
        shutil.rmtree(folder, ignore_errors=True)
        return
    _parked[python] = (child, folder)


def parked_answer(python: str, timeout_s: float) -> str | None:
    """What the child parked for `python` answered the preflight (torch_question), once it has; None where
    there is no such child or it gave no answer in time (it is then dropped: the preflight asks afresh)."""
    if python in _answers:
        return _answers[python]
    child, _ = _parked.get(python, (None, None))
    answer = None
    if child is not None:
        prepare_parent()  # while the child imports torch, the wait would be idle
        try:
            if child.events.poll(timeout_s):
                answer = child.events.recv_bytes(1 << 16).decode(errors="replace")
        except (EOFError, OSError):
            answer = None
    _answers[python] = answer
    if child is not None and answer is None:
        drop = adopt_parked(python)
        if drop is not None:
            drop.close(0.0)
    return answer


PARENT_MODULES = ("rigcheck.engine.run.owner",)  # what the run imports once the preflight has its answer


def prepare_parent() -> None:
    """Import the run's own machinery (owner, runner, store, sampler: 0.2-0.5 s) in this thread while it would
    only wait for the parked child's `import torch`; a failure is left to the import that needs it."""
    for name in PARENT_MODULES:
        with contextlib.suppress(Exception):
            importlib.import_module(name)


def adopt_parked(python: str) -> WarmChild | None:
    """The child park_early started for `python`, if it is still alive; it is the caller's from now on."""
    if python in _parked and python not in _answers:
        parked_answer(python, 180.0)  # its answer comes first on its pipe: read it before any event
    child, folder = _parked.pop(python, (None, None))
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)  # it runs from the run's folder once its first order comes
    if child is not None and not child.alive():
        child.close(0.0)
        return None
    return child


@atexit.register
def _close_parked() -> None:
    """A child parked for a run that never started (bad input, --detach) leaves with this process."""
    for python in list(_parked):
        child = adopt_parked(python)
        if child is not None:
            child.close(1.0)
