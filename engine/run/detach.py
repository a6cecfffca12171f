"""Starting a run in a background engine process, in its own session, and learning its run id."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

from rigcheck.engine.run.childpath import child_env
from rigcheck.engine.run.request import RunRequest

START_TIMEOUT_S = 60.0
# `python -m` would import from the caller's folder first (a planted `rigcheck/` there would run as the
# engine); `-c` puts that folder in as '', which goes before anything is imported. `sys` is built in.
ENGINE_BOOTSTRAP = (
    "import sys; sys.path[:] = [p for p in sys.path if p]; import runpy; "
    "runpy.run_module('rigcheck.engine.run.engine_main', run_name='__main__', alter_sys=True)"
)


class StartFailed(Exception):
    """The engine could not start the run; the message is the engine's own reason."""


def spawn(store_path: Path, request: RunRequest, timeout: float = START_TIMEOUT_S) -> tuple[int, int]:
    """Start the engine for `request` and return (run id, engine pid) once the run has begun."""
    read_fd, write_fd = os.pipe()
    proc = subprocess.Popen(
        [sys.executable, "-c", ENGINE_BOOTSTRAP, str(store_path), str(write_fd), request.to_json()],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(write_fd,),
        env=child_env(),
        start_new_session=True,  # not a child of the terminal: no SIGHUP, no Ctrl-C
    )
    os.close(write_fd)
    threading.Thread(target=proc.wait, name="rigcheck-engine-reaper", daemon=True).start()
    data = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([read_fd], [], [], 0.2)
            if not ready:
                continue
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(read_fd)
    if not data:
        raise StartFailed(f"the engine (pid {proc.pid}) ended or hung before starting the run")
    try:
        answer = json.loads(data)
    except ValueError:
        raise StartFailed(f"the engine (pid {proc.pid}) answered something that is not JSON: {data[:200]!r}") from None
    if not isinstance(answer, dict):
        raise StartFailed(f"the engine (pid {proc.pid}) answered {answer!r}, not a run id")
    if "error" in answer:
        raise StartFailed(answer["error"])
    return int(answer["run_id"]), int(answer["pid"])
