"""The background engine process: `python -m rigcheck.engine.run.engine_main STORE FD REQUEST` carries one run,
in a session of its own, so a closed terminal, a dropped SSH link or a quit app leaves the run going.

It tells its starter the run id (or why it could not start) on pipe FD, then writes its own output
to `engine.log` in the run's log folder.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading

from rigcheck.engine.exits import EXIT_USAGE
from rigcheck.engine.run.codec import CodecError
from rigcheck.engine.run.owner import DeviceBusy, OwnedRun
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store, StoreError


def _tell(fd: int, answer: dict[str, object]) -> None:
    try:
        os.write(fd, json.dumps(answer).encode())
    finally:
        os.close(fd)


def _to_log(path: str) -> None:
    """From here on, our own output (and any C-level output) goes to the engine log, never a terminal."""
    log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    os.close(devnull)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[1].isdigit():
        print("usage: python -m rigcheck.engine.run.engine_main STORE FD REQUEST_JSON", file=sys.stderr)
        return EXIT_USAGE
    store_path, fd = argv[0], int(argv[1])
    try:
        request = RunRequest.from_json(argv[2])
    except CodecError as error:
        _tell(fd, {"error": f"the engine could not read the run's request: {error}"})
        return EXIT_USAGE
    os.umask(0o077)  # the store, logs and shared files are the owner's only
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        owned = OwnedRun(Store(store_path), request)
    except (StoreError, DeviceBusy) as error:
        _tell(fd, {"error": str(error)})
        return EXIT_USAGE
    except Exception as error:
        _tell(fd, {"error": f"the engine could not start: {type(error).__name__}: {error}"})
        return EXIT_USAGE
    _to_log(str(owned.log_dir / "engine.log"))
    print(f"rigcheck engine pid {os.getpid()}: run {owned.run_id}, {request.to_json()}", flush=True)
    _tell(fd, {"run_id": owned.run_id, "pid": os.getpid()})  # at once: the run is in the store, its control open
    owned.start()
    cancelled = False
    while not owned.wait(0.2):
        if stop.is_set() and not cancelled:
            print("SIGTERM: stopping the run", flush=True)
            owned.cancel()
            cancelled = True
    code = owned.finish()
    for problem in owned.session.run.listener_errors:
        print(f"listener error: {problem}", flush=True)
    print(f"run {owned.run_id} ended, exit code {code}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
