"""`rigcheck run`: checks the input, runs the stages with live progress on stderr, prints the summary on stdout.

Only the summary goes to stdout, so `rigcheck run > report.txt` keeps the report and the terminal
keeps the progress.
"""

from __future__ import annotations

import argparse
import signal
import sqlite3
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rigcheck.engine.exits import EXIT_FAIL, EXIT_USAGE
from rigcheck.engine.report.exit_words import exit_line
from rigcheck.engine.report.failures import failures, is_strict, warned
from rigcheck.engine.report.judged import judged_line
from rigcheck.engine.report.settings_note import settings_line
from rigcheck.engine.run.options import request_from_args, write_reports
from rigcheck.engine.run.preflight import STDOUT, UsageError
from rigcheck.engine.store import StoreError

if TYPE_CHECKING:
    from rich.console import Console


def raise_interrupt(signum: int, frame: object) -> None:
    """SIGTERM or SIGHUP stops the run as Ctrl-C does, and its stages say which signal stopped it, never that the
    user cancelled it."""
    from rigcheck.engine.run.owner import StopSignal

    raise StopSignal(f"stopped by {signal.Signals(signum).name}")


def _print_summary(report: dict[str, Any], to_stderr: bool = False) -> None:
    from rigcheck.tui.cli_display import contention_table, fitted_console, measurements_table, summary_table

    out = fitted_console(stderr=to_stderr)
    out.print(summary_table(report))
    for table in (measurements_table(report, out.width), contention_table(report)):
        if table is not None:
            out.print(table)


def _detach(store: Any, request: Any) -> int:
    """Hand the run to a background engine process and say how to follow and stop it."""
    from rigcheck.engine.run.detach import StartFailed, spawn

    try:
        run_id, pid = spawn(store.path, request)
    except StartFailed as error:
        raise UsageError(str(error)) from None
    print(f"run {run_id} started in the background (engine pid {pid})")
    print(f"follow it: rigcheck follow {run_id}    stop it: rigcheck cancel {run_id}")
    print(f"engine log: {store.log_dir(run_id) / 'engine.log'}")
    return 0


def expected_times(store: Any, device: str, profile: str) -> dict[str, float]:
    """Each stage's expected time from earlier runs here; none (said as "no estimate") where the store cannot say."""
    try:
        return store.stage_durations(device, profile)
    except (StoreError, sqlite3.Error):
        return {}


def summarise(report: dict[str, Any], code: int, err: Console, to_stderr: bool = False) -> int:
    """Print the summary on stdout (on stderr when stdout takes a report), and say where --strict made the run fail;
    `code`, the engine's (report/failures.py applied --strict to it), comes back as it is."""
    _print_summary(report, to_stderr)
    count = warned(report)
    if is_strict(report) and count and code == EXIT_FAIL and not failures(report, strict=False):
        err.print(f"--strict: {count} WARN verdict(s) fail the run", style="yellow")
    return code


def command_run(args: argparse.Namespace) -> int:
    from rigcheck.engine.run.warm_pool import park_early

    early = None if args.detach or args.cold else park_early  # the first stage child starts beside the preflight
    request, store = request_from_args(args, early)
    if args.detach:
        return _detach(store, request)
    # Only now: a refused option or a detached run answers without loading the run's machinery or rich.
    from rigcheck.engine.run.owner import DeviceBusy, OwnedRun
    from rigcheck.tui.cli_clock import RunClock
    from rigcheck.tui.cli_display import LiveDisplay, fitted_console

    try:
        owned = OwnedRun(store, request)
    except DeviceBusy as error:
        raise UsageError(str(error)) from None
    run_id, log_dir = owned.run_id, owned.log_dir
    err = fitted_console(stderr=True)
    clock = RunClock.of([info.name for info in request.stages], expected_times(store, request.device, request.profile))
    with LiveDisplay(err, clock, strict=args.strict) as display:
        owned.listen(display)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, raise_interrupt)
        code = owned.run_to_end(
            lambda: err.print("interrupted: stopping the stage child", style="magenta"), settle=True
        )  # settle: Ctrl-C after the end no longer cuts off the summary and the reports (issue 35.12)
    if owned.session.store_error:
        err.print(f"rigcheck: {owned.session.store_error}", markup=False, style="red")
    report = store.report(run_id)
    assert report is not None
    report_to_stdout = STDOUT in (args.json, args.junit)  # `--json -`: stdout holds only the report
    code = summarise(report, code, err, to_stderr=report_to_stdout)
    counted = judged_line(report)  # issue 32: figures judged against a reference, and not
    if counted:
        err.print(counted, markup=False, highlight=False)
    settings = settings_line(report)  # issue 41: a setting that changed no figure ends as this note
    if settings:
        err.print(settings, markup=False, highlight=False)
    err.print(f"run {run_id} stored in {store.path}; logs in {log_dir}", markup=False, highlight=False)
    if not write_reports(args, report, lambda text: err.print(text, markup=False)):
        code = code or EXIT_USAGE
    said = exit_line(code, report)  # issue 43: any exit other than 0 ends with what it means
    if said:
        err.print(said, markup=False, highlight=False)
    return code
