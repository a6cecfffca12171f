"""The runs that `serve`'s tabs started end with serve: each tab's app notes the number of a run it starts in a
private folder that serve names in its environment, and when Ctrl-C (or SIGTERM) stops serve, after the tabs have
ended, serve stops those runs still going, as `rigcheck cancel` would, and says so. A run started in a terminal is
not one of them; a tab closed while serve goes on leaves its run going, as closing a terminal does."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

SERVE_RUNS_ENV = "RIGCHECK_SERVE_RUNS"  # the folder, set by serve for its tabs' apps
STOP_S = 10.0  # how long serve waits for each run's engine to write its end


def note_run(run_id: int, environ: dict[str, str] | None = None) -> None:
    """In a tab's app: the run it started, for serve to stop when it stops (nothing outside a tab)."""
    folder = (os.environ if environ is None else environ).get(SERVE_RUNS_ENV)
    if folder:
        with contextlib.suppress(OSError):
            (Path(folder) / f"run-{run_id}").write_text("")


def noted_runs(folder: Path) -> list[int]:
    names = (p.name.removeprefix("run-") for p in folder.glob("run-*"))
    return sorted(int(n) for n in names if n.isascii() and n.isdigit())


def stop_runs(folder: Path, store: Any, timeout: float = STOP_S) -> list[str]:
    """Stop every noted run still going; one line for each, said on stderr and returned."""
    said = []
    for run_id in noted_runs(folder):
        run = store.run(run_id)
        if run is None or run["status"] != "running" or not store.is_live(run):
            continue
        from rigcheck.engine.run.cancel import stop

        problem = stop(store, run_id, timeout)
        said.append(
            f"rigcheck serve: stopped run {run_id}, which a tab started"
            if problem is None
            else f"rigcheck serve: run {run_id}, which a tab started, may go on ({problem}): rigcheck cancel {run_id}"
        )
        print(said[-1], file=sys.stderr, flush=True)
    return said


@contextlib.contextmanager
def tab_runs(open_store: Callable[[], Any]) -> Iterator[Path]:
    """While serving: the folder the tabs note their runs in; on leaving, those runs stopped."""
    folder = Path(tempfile.mkdtemp(prefix="rigcheck-serve-runs-"))  # 0700, made anew
    os.environ[SERVE_RUNS_ENV] = str(folder)  # the tabs' apps inherit serve's environment
    try:
        yield folder
    finally:
        os.environ.pop(SERVE_RUNS_ENV, None)
        try:
            if noted_runs(folder):
                try:
                    stop_runs(folder, open_store())
                except Exception as error:  # a store gone or unreadable: say so, never a traceback
                    print(f"rigcheck serve: the tabs' runs could not be stopped ({error})", file=sys.stderr)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
