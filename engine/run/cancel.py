"""Stopping a run another process carries, for `rigcheck cancel` and the app alike: ask its owner, or say why not.

An engine that is stopped (SIGSTOP, Ctrl-Z) cannot answer, but a request left at its socket is acted
on when it resumes: that is said as it is, "queued", never as a failure that then happens anyway.
"""

from __future__ import annotations

import time
from typing import Any

from rigcheck.engine.run.control import TIMEOUT_S, ControlError, NoAnswer, NotLive, leave, request
from rigcheck.engine.run.sockets import socket_of, stopped_pid, sweep_stale


class Queued(ControlError):
    """The request waits at the socket of an engine that cannot answer now; it takes effect when it can."""


WHAT = {"cancel": "the cancel", "cancel_stage": "the cancel of its running stage"}


def _queued(run_id: int, op: str, run: dict[str, Any] | None, pid: int | None) -> Queued:
    what = WHAT.get(op, f"the request {op!r}")
    if pid is not None:
        return Queued(
            f"run {run_id}'s engine (pid {pid}) is stopped (SIGSTOP or Ctrl-Z): {what} is queued and "
            f"takes effect when it resumes (`kill -CONT {pid}`)"
        )
    engine = f"pid {run['pid']}" if run else "its engine"
    return Queued(
        f"run {run_id}'s engine ({engine}) has not answered in {TIMEOUT_S:.0f} s: {what} is queued and "
        "takes effect once the engine gets to it"
    )


def send(store: Any, run_id: int, op: str) -> None:
    """Give `op` to the run's engine. ControlError says why not; Queued, that it waits for the engine."""
    run = store.run(run_id)
    path = socket_of(store, run_id, run)
    pid = stopped_pid(run)
    if pid is not None:  # it cannot answer: leave the request, say so at once
        leave(path, op)
        raise _queued(run_id, op, run, pid)
    try:
        request(path, op)
    except NoAnswer:
        raise _queued(run_id, op, run, stopped_pid(store.run(run_id))) from None


def ask(store: Any, run_id: int, op: str) -> str | None:
    """Send `op` to the run's owner; None when it was taken, else why not (or that it is queued)."""
    try:
        send(store, run_id, op)
    except ControlError as error:
        return str(error)
    return None


def cancel(store: Any, run_id: int, stage: bool = False) -> None:
    """Ask the live run to stop (only its running stage, with `stage`); ControlError says why it could not,
    Queued that the engine will act on it when it runs again."""
    sweep_stale(store)
    run = store.run(run_id)
    if run is None or not store.is_live(run):
        raise NotLive(f"run {run_id} is not running ({run['status'] if run else 'no such run'})")
    send(store, run_id, "cancel_stage" if stage else "cancel")


def stop(store: Any, run_id: int, timeout: float = 15.0) -> str | None:
    """Cancel the whole run and wait for its engine to write the end; None once it has, else why not."""
    problem = ask(store, run_id, "cancel")
    if problem is not None:
        return problem
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run = store.run(run_id)
        if run is None or run["status"] != "running" or not store.is_live(run):
            return None
        time.sleep(0.05)
    return ask(store, run_id, "ping") or "the engine did not end the run in time"
