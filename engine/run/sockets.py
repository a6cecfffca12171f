"""Finding a run's control socket from its row in the store, telling a stopped engine, and clearing the
sockets that dead engines (`kill -9`) left behind."""

from __future__ import annotations

import contextlib
import os
import socket
import stat
from pathlib import Path
from typing import Any

import psutil
from rigcheck.engine.run.control import control_path, stale
from rigcheck.engine.run.runtime import PREFIX

SWEEP_RUNS = 200  # the newest runs whose sockets a sweep looks at


def socket_of(store: Any, run_id: int, run: dict[str, Any] | None = None) -> Path:
    """Where run `run_id`'s engine listens: the path it recorded, else (an older engine) the default
    place. ControlError when neither can be named."""
    run = run if run is not None else store.run(run_id)
    recorded = run.get("control") if run else None
    if recorded:
        return Path(recorded)
    return control_path(store.path, run_id, create=False)


def stopped_pid(run: dict[str, Any] | None) -> int | None:
    """The run's engine pid when that engine is on this host and stopped (SIGSTOP, Ctrl-Z), else None."""
    if not run or run.get("host") != socket.gethostname() or not run.get("pid"):
        return None
    try:
        status = psutil.Process(int(run["pid"])).status()
    except (psutil.Error, ValueError):
        return None
    return int(run["pid"]) if status in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP) else None


def sweep_stale(store: Any) -> list[Path]:
    """Remove the sockets of runs whose engine is gone (nobody listens and its pid is not the run's any
    more), and the fresh folders they were in; the paths removed. Never raises."""
    removed = []
    with contextlib.suppress(Exception):
        for run in store.runs(SWEEP_RUNS):
            path = run.get("control")
            if path and not store.is_live(run) and _own_socket(path) and stale(Path(path)):
                with contextlib.suppress(OSError):
                    os.unlink(path)
                    removed.append(Path(path))
                    _remove_fresh_folder(Path(path).parent)
    return removed


def _own_socket(path: str) -> bool:
    """Only a socket of ours is ever removed, whatever path a row names."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISSOCK(info.st_mode) and info.st_uid == os.getuid()


def _remove_fresh_folder(folder: Path) -> None:
    """A folder made for one socket (`rigcheck-XXXXXXXX`), once empty; never the shared runtime folder."""
    if folder.name.startswith(PREFIX) and not folder.name[len(PREFIX) :].isdigit():
        with contextlib.suppress(OSError):
            os.rmdir(folder)
