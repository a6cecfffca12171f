"""`rigcheck follow` and `rigcheck cancel`: watch a run another process carries, or stop it."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from rigcheck.engine.exits import EXIT_INTERRUPTED
from rigcheck.engine.report.exit_words import exit_line
from rigcheck.engine.run.preflight import UsageError, open_store, resolve_run_id

if TYPE_CHECKING:
    from rigcheck.engine.store import Store
    from rigcheck.tui.cli_clock import RunClock


def _live_or_named(store, text: str | None) -> int:  # type: ignore[no-untyped-def]
    if text is not None:
        return resolve_run_id(store, text)
    live = store.live_runs()
    if not live:
        raise UsageError("no live run to follow; `rigcheck runs` lists every run, `rigcheck follow N` replays one")
    return int(live[0]["id"])


def _clock(store: Store, run_id: int) -> tuple[RunClock, bool]:
    """(the run's stages and their expected times, as `run` showed them; whether it was made with --strict)."""
    from rigcheck.tui.cli_clock import RunClock
    from rigcheck.tui.cli_run import expected_times

    run = store.run(run_id) or {}
    try:
        stages = [str(name) for name in json.loads(run.get("stages") or "[]")]
    except (TypeError, ValueError):
        stages = []
    clock = RunClock.of(stages, expected_times(store, run.get("device") or "", run.get("profile") or ""))
    return clock, bool(run.get("strict"))


def command_follow(args: argparse.Namespace) -> int:
    """The live progress display of `run`, fed by the run's engine as it happens (from the store when the
    engine is gone), then the summary and the run's exit code. Ctrl-C stops following, never the run.
    An engine that stops answering (SIGSTOP, Ctrl-Z, hung) is said within seconds and every 30 s after;
    following goes on, since a stopped engine that resumes carries the run on."""
    from rigcheck.engine.run.follow import EngineQuiet, RunFollower
    from rigcheck.engine.run.sockets import sweep_stale
    from rigcheck.tui.cli_display import LiveDisplay, fitted_console
    from rigcheck.tui.cli_run import summarise

    store = open_store(args.store)
    run_id = _live_or_named(store, args.run)
    sweep_stale(store)
    err = fitted_console(stderr=True)
    follower = RunFollower(store, run_id)
    clock, strict = _clock(store, run_id)
    try:
        with LiveDisplay(err, clock, strict=strict) as display:
            for event in follower.follow():
                if isinstance(event, EngineQuiet):
                    style = "green" if event.answering else "yellow"
                    err.print(f"run {run_id}: {event.text}", style=style, markup=False, highlight=False)
                else:
                    display(event)
    except KeyboardInterrupt:
        err.print(f"stopped following; run {run_id} goes on (rigcheck follow {run_id})", style="magenta")
        return EXIT_INTERRUPTED
    if follower.gone:
        err.print(f"run {run_id}: its engine is gone; the run is marked interrupted", style="red")
    report = store.report(run_id)
    assert report is not None
    run = report["run"]
    if run.get("error"):
        err.print(f"run {run_id} ended in error: {run['error']}", style="red", markup=False)
    code = run["exit_code"] if run["exit_code"] is not None else EXIT_INTERRUPTED
    code = summarise(report, code, err)
    err.print(f"run {run_id}: {run['status']}; logs in {store.log_dir(run_id)}", markup=False, highlight=False)
    said = exit_line(code, report)  # any exit other than 0 ends with what it means, as `run` does
    if said:
        err.print(said, markup=False, highlight=False)
    return code


def command_cancel(args: argparse.Namespace) -> int:
    """Ask a live run's engine to stop; a stopped engine gets the request queued, and is said to."""
    from rigcheck.engine.run.cancel import Queued, cancel
    from rigcheck.engine.run.control import ControlError

    store = open_store(args.store)
    run_id = resolve_run_id(store, args.run)
    try:
        cancel(store, run_id, stage=args.stage)
    except Queued as queued:
        print(queued)
        return 0
    except ControlError as error:
        raise UsageError(str(error)) from None
    what = "its running stage" if args.stage else "the run"
    print(f"run {run_id}: asked the engine to stop {what}")
    return 0
