"""`rigcheck run`: checks the input, runs the stages with live progress on stderr, prints the summary on stdout.

Only the summary goes to stdout, so `rigcheck run > report.txt` keeps the report and the terminal
keeps the progress.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rigcheck.engine.exits import EXIT_FAIL, EXIT_USAGE
from rigcheck.tui.preflight import UsageError, check_output_file, inspect_python, open_store, run_devices


def raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _print_summary(report: dict[str, Any]) -> None:
    from rigcheck.tui.cli_display import contention_table, fitted_console, measurements_table, summary_table

    out = fitted_console()
    out.print(summary_table(report))
    for table in (measurements_table(report), contention_table(report)):
        if table is not None:
            out.print(table)


def write_reports(args: argparse.Namespace, report: dict[str, Any], err: Console) -> bool:
    from rigcheck.engine.report.export import to_json
    from rigcheck.engine.report.junit import to_junit

    ok = True
    for path, render in ((args.json, lambda: to_json(report)), (args.junit, lambda: to_junit(report, args.strict))):
        if not path:
            continue
        try:
            Path(path).expanduser().write_text(render())
        except OSError as error:  # checked before the run, so only a disk that filled up since
            err.print(f"rigcheck: could not write {path}: {error.strerror or error}", markup=False)
            ok = False
    return ok


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


def summarise(report: dict[str, Any], code: int, strict: bool, err: Console) -> int:
    """Print the summary on stdout; the exit code, with --strict turning WARN into a failure."""
    _print_summary(report)
    warned = sum(v["status"] == "WARN" for v in report["verdicts"])
    if strict and warned and code == 0:
        err.print(f"--strict: {warned} WARN verdict(s) fail the run", style="yellow")
        code = EXIT_FAIL
    return code


def request_from_args(args: argparse.Namespace) -> tuple[Any, Any]:
    """Check `run`'s options and turn them into a RunRequest and the store it goes to (UsageError if bad)."""
    from rigcheck.engine.registry import UnknownStage, default_stages, resolve
    from rigcheck.engine.run.request import RunRequest
    from rigcheck.engine.stage import PROFILES, parse_device

    try:
        infos = resolve(args.stages or list(default_stages(args.profile)))
        device = parse_device(args.device) if args.device else None
    except (UnknownStage, ValueError) as error:
        raise UsageError(str(error)) from None
    if args.profile not in PROFILES:
        raise UsageError(f"bad profile {args.profile!r}: use one of {', '.join(PROFILES)}")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    if args.wait_quiet is not None and args.wait_quiet < 0:
        raise UsageError("--wait-quiet must be zero or more seconds")
    for flag in ("json", "junit"):
        if getattr(args, flag):
            check_output_file(f"--{flag}", getattr(args, flag))
    if args.duration is not None and not 0 < args.duration < 7 * 86400:
        raise UsageError("--duration must be a positive number of seconds (under a week)")
    if args.peer_tolerance is not None and not 0 < args.peer_tolerance < 100:
        raise UsageError("--peer-tolerance must be a percentage between 0 and 100")
    python = args.python or sys.executable
    gpus: tuple[str, ...] = ()
    if args.python or device != "cpu":
        device, gpus = run_devices(device, inspect_python(python))
    device = device or "cpu"
    store = open_store(args.store)
    options: dict[str, object] = {name: True for name in ("max_find", "compile") if getattr(args, name)}
    if args.duration is not None:
        options["duration"] = args.duration
    request = RunRequest(
        tuple(infos),
        device,
        args.profile,
        python,
        gpus,
        options,
        args.timeout,
        args.serial,
        None if args.peer_tolerance is None else args.peer_tolerance / 100.0,
        args.wait_quiet,
        not args.no_telemetry,
        tuple(sys.argv[1:]),
        args.force,
    )
    return request, store


def command_run(args: argparse.Namespace) -> int:
    from rigcheck.engine.run.owner import DeviceBusy, OwnedRun
    from rigcheck.tui.cli_display import LiveDisplay, fitted_console

    request, store = request_from_args(args)
    if args.detach:
        return _detach(store, request)

    try:
        owned = OwnedRun(store, request)
    except DeviceBusy as error:
        raise UsageError(str(error)) from None
    run_id, log_dir = owned.run_id, owned.log_dir
    err = fitted_console(stderr=True)
    with LiveDisplay(err) as display:
        owned.listen(display)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, raise_interrupt)
        code = owned.run_to_end(lambda: err.print("interrupted: stopping the stage child", style="magenta"))
    if owned.session.store_error:
        err.print(f"rigcheck: {owned.session.store_error}", markup=False, style="red")
    report = store.report(run_id)
    assert report is not None
    code = summarise(report, code, args.strict, err)
    err.print(f"run {run_id} stored in {store.path}; logs in {log_dir}", markup=False, highlight=False)
    if not write_reports(args, report, err):
        return code or EXIT_USAGE
    return code
