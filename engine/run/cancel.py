"""Stopping a run another process carries, for `rigcheck cancel` and the app alike: ask its owner, or say why not."""

from __future__ import annotations

import time
from typing import Any

from rigcheck.engine.run.control import ControlError, NotLive, control_path, request


def ask(store: Any, run_id: int, op: str) -> str | None:
    """Send `op` to the run's owner; None when it was taken, else why not."""
    try:
        request(control_path(store.path, run_id), op)
    except ControlError as error:
        return str(error)
    return None


def cancel(store: Any, run_id: int, stage: bool = False) -> None:
    """Ask the live run to stop (only its running stage, with `stage`); ControlError says why it could not."""
    run = store.run(run_id)
    if run is None or not store.is_live(run):
        raise NotLive(f"run {run_id} is not running ({run['status'] if run else 'no such run'})")
    request(control_path(store.path, run_id), "cancel_stage" if stage else "cancel")


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
