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

from .preflight import UsageError, check_output_file, inspect_python, open_store, run_devices

EXIT_USAGE = 2
EXIT_FAIL = 1
EXIT_INTERRUPTED = 130


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _print_summary(report: dict[str, Any]) -> None:
    from .cli_display import contention_table, fitted_console, measurements_table, summary_table

    out = fitted_console()
    out.print(summary_table(report))
    for table in (measurements_table(report), contention_table(report)):
        if table is not None:
            out.print(table)


def _write_reports(args: argparse.Namespace, report: dict[str, Any], err: Console) -> bool:
    from rigcheck.engine.export import to_json
    from rigcheck.engine.junit import to_junit

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


def command_run(args: argparse.Namespace) -> int:
    from rigcheck.engine.registry import UnknownStage, default_stages, resolve
    from rigcheck.engine.runner import RunPlan
    from rigcheck.engine.session import RunSession, start_sampler
    from rigcheck.engine.stage import PROFILES, parse_device

    from .cli_display import LiveDisplay, fitted_console

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

    err = fitted_console(stderr=True)
    run_id = store.begin_run([i.name for i in infos], device, args.profile, python, sys.argv[1:])
    log_dir = store.log_dir(run_id)
    options: dict[str, object] = {name: True for name in ("max_find", "compile") if getattr(args, name)}
    if args.duration is not None:
        options["duration"] = args.duration
    plan = RunPlan(run_id, infos, device, args.profile, python, log_dir, options, timeout_s=args.timeout, gpus=gpus)
    plan.serial = args.serial
    if args.peer_tolerance is not None:
        plan.peer_tolerance = args.peer_tolerance / 100.0
    interrupted = False
    sampler = None if args.no_telemetry else start_sampler()
    with LiveDisplay(err) as display:
        session = RunSession(store, plan, [display], sampler, args.wait_quiet)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _raise_interrupt)
        session.start()
        try:
            while not session.wait(0.2):
                pass
        except KeyboardInterrupt:
            interrupted = True
            err.print("interrupted: stopping the stage child", style="magenta")
            session.cancel()
            session.wait(10)
    if sampler is not None:
        sampler.stop()
    code = EXIT_INTERRUPTED if interrupted else session.run.exit_code
    if interrupted:
        store.end_run(run_id, "interrupted", code)
    report = store.report(run_id)
    assert report is not None
    _print_summary(report)
    warned = sum(v["status"] == "WARN" for v in report["verdicts"])
    if args.strict and warned and code == 0:
        err.print(f"--strict: {warned} WARN verdict(s) fail the run", style="yellow")
        code = EXIT_FAIL
    err.print(f"run {run_id} stored in {store.path}; logs in {log_dir}", markup=False, highlight=False)
    if not _write_reports(args, report, err):
        return code or EXIT_USAGE
    return code
