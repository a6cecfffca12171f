"""The one engine entry point that owns a run end to end: its row, log folder, plan, sampler, events, cancel and end.

The foreground `rigcheck run` uses it in its own process; `run --detach` and the app use it inside a
background engine process (engine_main). Front ends only ask for a run and render its events.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from rigcheck.engine.run.control import ControlError, ControlServer, new_control_path
from rigcheck.engine.run.devlock import DeviceLocked, DeviceLocks
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Listener, RunPlan
from rigcheck.engine.run.session import RunSession, settle_s, start_sampler
from rigcheck.engine.run.sockets import sweep_stale
from rigcheck.engine.run.stream import Broadcast
from rigcheck.engine.store import Store, StoreError
from rigcheck.engine.store.errors import free_kib
from rigcheck.engine.store.run_end import run_end
from rigcheck.engine.telemetry.sampler import Sampler

MIN_FREE_KIB = 256  # below this a run could not keep its results and its end: it is refused, not begun


def room_to_begin(store: Store) -> None:
    """Refuse to begin a run on a store whose disk is all but full: it would stop at its first write and could
    not even store why (SQLite's log needs pages of room for the end). StoreError, one line."""
    free = free_kib(store.path.parent)
    if 0 <= free < MIN_FREE_KIB and not store.read_only:
        raise StoreError(
            f"store {store.path}: its disk has {free} KiB free, less than the {MIN_FREE_KIB} KiB a run needs to "
            "keep its results and its end; nothing was run: free some space or point --store elsewhere"
        )


def settled() -> Any:
    """From here on Ctrl-C is ignored (main thread only: the app runs runs in threads), so the run's end and
    its reports are written whole and the exit code said is the one stored; the handler it replaced, or None."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, signal.SIG_IGN)


class StopSignal(KeyboardInterrupt):
    """A signal made into Ctrl-C by a process that knows who sent it (torchrun's SIGTERM to a fleet agent): the
    stopped stage and those left unrun say `reason`, never "cancelled by the user"."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class DeviceBusy(Exception):
    """Another live run holds a device this one asks for; the message names it and how to follow it."""


def busy_message(taken: list[dict[str, object]]) -> str:
    run = taken[0]
    return (
        f"run {run['id']} (pid {run['pid']}) is already using {run['device']}: follow it with "
        f"`rigcheck follow {run['id']}`, stop it with `rigcheck cancel {run['id']}`, or add --force "
        "(every figure of both runs will then say they shared the device)"
    )


class OwnedRun:
    """Creates the run in the store, runs it on a supervisor thread, answers cancel requests and writes its end."""

    def __init__(
        self,
        store: Store,
        request: RunRequest,
        listeners: Iterable[Listener] = (),
        sampler: Sampler | None = None,
        control: bool = True,
    ) -> None:
        self.store = store
        self.request = request
        names = [info.name for info in request.stages]
        sweep_stale(store)  # sockets that engines killed with -9 left behind
        room_to_begin(store)
        try:  # one run per GPU on this machine, whatever store each run writes to
            self.locks = DeviceLocks().take(request.devices, str(store.path), request.force)
        except DeviceLocked as locked:
            raise DeviceBusy(str(locked)) from None
        try:
            run_id, taken = store.claim_run(
                names,
                request.device,
                request.profile,
                request.python,
                list(request.argv),
                request.devices,
                request.force,
                request.strict,
            )
        except BaseException:
            self.locks.release()
            raise
        if run_id is None:
            self.locks.release()
            raise DeviceBusy(busy_message(taken))
        self.run_id: int = run_id
        self.locks.name_run(run_id)
        self.log_dir: Path = store.make_log_dir(run_id)
        self._own_sampler = sampler is None and request.telemetry
        # Its first samples are waited for in start(): a detached run's id is told before that wait
        self.sampler = start_sampler(settle=False) if self._own_sampler else sampler
        self._settled_at = time.monotonic() + (settle_s(0.1) if self._own_sampler else 0.0)
        self.session = RunSession(
            store,
            RunPlan(run_id, request, self.log_dir),
            listeners,
            self.sampler,
            request.wait_quiet_s,
            devices=request.devices,  # type: ignore[arg-type]
        )
        # viewers subscribe on the control socket; events and samples are pushed to them as they happen
        self.stream = Broadcast(store.path, run_id, getattr(self.sampler, "notes", []))
        self.session.run.listeners.append(self.stream.on_event)
        if self.locks.note:
            self.session.run.listener_errors.append(self.locks.note)
        self.control: ControlServer | None = None
        if control:
            self._open_control()

    def _open_control(self) -> None:
        """The control socket, in a folder only this user can have made, its path recorded with the run."""
        try:
            path, fresh = new_control_path(self.store.path, self.run_id)
        except ControlError as error:  # the run still runs; only remote cancel is lost
            self.session.run.listener_errors.append(f"no control channel: {error}")
            return
        try:
            self.control = ControlServer(path, self._on_request, subscribe=self.stream.subscribe, own_dir=fresh)
        except (ControlError, OSError) as error:
            self.session.run.listener_errors.append(f"no control channel: {error}")
            if fresh:
                with contextlib.suppress(OSError):
                    os.rmdir(path.parent)
            return
        try:
            self.store.record_control(self.run_id, str(path))
        except Exception as error:  # a store that cannot be written stops the run soon enough
            self.session.run.listener_errors.append(f"the control socket's path was not recorded: {error}")

    def _on_request(self, op: str) -> None:
        if op == "cancel":
            self.cancel()
        elif op == "cancel_stage":
            self.cancel_stage()

    def listen(self, listener: Listener) -> OwnedRun:
        """Add a front end's listener before the run starts (it is called on the supervisor thread)."""
        self.session.run.listeners.append(listener)
        return self

    def start(self) -> OwnedRun:
        time.sleep(max(0.0, self._settled_at - time.monotonic()))  # a few samples before the first stage
        if self.sampler is not None:
            self.sampler.add_listener(self.stream.on_sample)
        self.session.start()
        return self

    def cancel(self, reason: str = "") -> None:
        """Stop the run; `reason` replaces "cancelled by the user" in what its stages say."""
        self.session.cancel(reason)

    def cancel_stage(self) -> None:
        self.session.run.cancel_stage()

    def wait(self, timeout: float | None = None) -> bool:
        return self.session.wait(timeout)

    def run_to_end(self, on_interrupt: Callable[[], None] = lambda: None, settle: bool = False) -> int:
        """Start, wait for the end, and on Ctrl-C (or a signal made into it) stop the stage child; the exit code.

        Once the run has ended (or the first Ctrl-C came), Ctrl-C no longer interrupts the main thread while the
        end is stored: a Ctrl-C in that last moment once gave exit 130 with nothing said and no report
        written, while the store said `complete`, exit 0. `settle`: leave it so after returning, for a caller
        that still writes the summary and the reports (the CLI); else Ctrl-C is given back as it was."""
        interrupted = False
        self.start()
        before = None
        try:
            while not self.wait(0.2):
                pass
            before = settled()
        except KeyboardInterrupt as stop:
            interrupted = True
            before = settled()
            on_interrupt()
            self.cancel(stop.reason if isinstance(stop, StopSignal) else "")
            self.wait(10)
        code = self.finish(interrupted)
        if before is not None and not settle:
            signal.signal(signal.SIGINT, before)
        return code

    def finish(self, interrupted: bool = False) -> int:
        """Write the run's end (the runner wrote 'complete' or 'cancelled' already, unless cut off) and
        release what it held; the exit code a front end should return."""
        if self.control is not None:
            self.control.close()
        self.locks.release()
        if self.sampler is not None:
            self.sampler.remove_listener(self.stream.on_sample)
        run = self.session.run
        end = run_end(run.status, run.exit_code, interrupted, self.session.store_error)
        if self.session.store_error is not None:
            self.session.room_for_the_end()  # the disk filled: the end is written into the room kept for it
        try:  # the runner's own end, stored with its RunFinished, stands unless this one differs or has a reason
            if end.status != run.status or end.error is not None:
                self.store.write_end(self.run_id, end)
        except Exception as failure:  # the disk is still full: the engine log says so
            print(f"rigcheck engine: could not write the run's end: {failure}", file=sys.stderr, flush=True)
        # only now: a follower that reads the stream to its end finds the run's end, and its reason, stored
        self.stream.close()  # subscribers get the last events, then the end of the stream
        if self.sampler is not None and self._own_sampler:
            self.sampler.stop()  # after the close: its join takes up to an interval
        self.session.close()  # the room kept on the disk for the end goes back
        assert end.exit_code is not None
        return end.exit_code
