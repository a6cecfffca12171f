"""The `rigcheck` command: parses arguments, runs stages headless or opens the app, and picks the exit code.

Exit codes: 0 all PASS/NOT JUDGED/WARN/SKIP, 1 any FAIL (or WARN with --strict), 3 any CRASH/TIMEOUT, 2 bad
usage, 7 any INCONCLUSIVE (could not be judged) with none of those, 130 interrupted.
"""

from __future__ import annotations

if __name__ == "__main__":  # `python -m rigcheck.tui.cli` is the console script: before the imports below,
    # a Ctrl-C is one line and 130, and `check`/`slurm-health` load only what they read with (no reference table)
    import sys

    from rigcheck.tui.entry import main as console_script

    sys.exit(console_script())

import argparse
import os
import sys
import time

from rigcheck.engine.exits import EXIT_CRASH, EXIT_INTERRUPTED, EXIT_USAGE
from rigcheck.engine.hw.gpu_nodes import surely_no_gpu
from rigcheck.engine.registry import STAGES
from rigcheck.engine.report.atomic_write import RefusedTarget, write_atomic
from rigcheck.engine.report.export import FORMATS, render
from rigcheck.engine.run.preflight import (
    UsageError,
    check_output_file,
    inspect_python,
    no_gpu_device,
    open_store,
    resolve_run_id,
    run_devices,
)
from rigcheck.engine.stage import PROFILES, parse_device
from rigcheck.engine.store import StoreError
from rigcheck.tui.cli_fleet import command_fleet
from rigcheck.tui.cli_follow import command_cancel, command_follow
from rigcheck.tui.cli_gate import (
    command_check,
    command_check_history,
    command_gpu_history,
    command_slurm_health,
    health_source,
)
from rigcheck.tui.cli_parser import build_parser
from rigcheck.tui.cli_references import command_references
from rigcheck.tui.cli_run import command_run
from rigcheck.tui.serve import command_serve

__all__ = ["EXIT_INTERRUPTED", "EXIT_USAGE", "UsageError", "build_parser", "main"]


def command_export(args: argparse.Namespace) -> int:

    if args.format not in FORMATS:
        raise UsageError(f"bad format {args.format!r}: use one of {', '.join(FORMATS)}")
    output = (
        check_output_file("--output", args.output) if args.output is not None else None
    )  # None: stdout (`-` or no -o)
    store = open_store(args.store)
    run_id = resolve_run_id(store, args.run)
    if args.format == "html":  # it draws the run's telemetry samples too, from the store
        from rigcheck.engine.report.html_report import export_html

        text = export_html(store, run_id)
    else:
        report = store.report(run_id)
        assert report is not None
        try:
            text = render(report, args.format)
        except ValueError as error:  # a baseline of a run with no GPU figure
            raise UsageError(str(error)) from None
    if output is not None:
        try:
            write_atomic(output, text)
        except RefusedTarget as refused:  # checked above, but it changed since
            raise UsageError(f"--output {args.output}: {refused}") from None
    else:
        sys.stdout.write(text)
    return 0


def command_show(args: argparse.Namespace) -> int:
    from rigcheck.engine.report.fleet_view import fleet_label
    from rigcheck.engine.report.run_time import started_at, took
    from rigcheck.tui.cli_display import (
        contention_table,
        fitted_console,
        fleet_table,
        measurements_table,
        print_table,
        summary_table,
    )

    store = open_store(args.store)
    report = store.report(resolve_run_id(store, args.run))
    assert report is not None
    console = fitted_console()
    run = report["run"]
    so_far = time.time() if store.is_live(run) else None
    console.print(
        f"run {run['id']}: {run['status']} (exit code {run['exit_code']}), started {started_at(run)}, "
        f"took {took(run, so_far)}, "
        f"device {fleet_label(run)}, profile {run['profile']}, python {run['python']}, "
        f"fingerprint {run['fingerprint'] or ('one per host' if report['fleet'] else 'none')}",
        markup=False,
        highlight=False,
    )
    if run.get("error"):  # why the run stopped (a full disk, a store it could not write)
        console.print(f"error: {run['error']}", markup=False, highlight=False)
    for table in (
        fleet_table(report),
        summary_table(report),
        measurements_table(report, console.width),
        contention_table(report),
    ):
        if table is not None:
            print_table(console, table)
    return 0


def command_compare(args: argparse.Namespace) -> int:
    from rigcheck.engine.report.compare import compare
    from rigcheck.tui.cli_display import compare_table, fitted_console

    store = open_store(args.store)
    first, second = resolve_run_id(store, args.first), resolve_run_id(store, args.second)
    if first == second:
        raise UsageError(f"compare needs two different runs ({args.first} and {args.second} are both run {first})")
    reports = store.report(first), store.report(second)
    assert reports[0] is not None and reports[1] is not None
    rows = compare(reports[0], reports[1])
    if not rows:
        print(f"runs {first} and {second} hold no figures to compare (only verdicts)")
        return 0
    fitted_console().print(compare_table(rows, first, second))
    return 0


def command_history(args: argparse.Namespace) -> int:
    from rigcheck.engine.run.sockets import sweep_stale
    from rigcheck.tui.cli_display import fitted_console, history_table

    if args.gpu:  # one GPU's health timeline (issue 33)
        return command_gpu_history(args)
    if args.checks:  # the gate's checks, a health timeline apart from runs (issue 43)
        return command_check_history(args)
    from rigcheck.engine.store.history import check_count, real_runs

    store = open_store(args.store)
    sweep_stale(store)  # sockets that engines killed with -9 left behind
    runs = real_runs(store, args.limit)
    for run in runs:
        if store.is_live(run):
            run["status"] = "LIVE"
    if runs:
        console = fitted_console()  # to a pipe or file, one line a run, like `show`
        console.print(history_table(runs, store.worst_statuses([run["id"] for run in runs]), console.width))
    else:  # never an empty table (above the checks' line on a node that only ran `rigcheck check`)
        print("no runs to list" if store.unlisted else "no runs yet")
    for line in store.unlisted:
        print(f"rigcheck: {line}", file=sys.stderr)
    count = check_count(store)
    if count:
        print(f"{count} health check(s) kept apart: `rigcheck history --checks`")
    return 0


def command_monitor(args: argparse.Namespace) -> int:
    from rigcheck.tui.monitor import monitor, store_given, textfile_path

    if args.count is not None and args.count < 1:
        raise UsageError("--count must be at least 1")
    if args.prom_textfile and args.json:
        raise UsageError("--json and --prom-textfile: choose one")
    prom = textfile_path(args.prom_textfile) if args.prom_textfile is not None else None
    if prom is not None:
        store_given(args.store)
    health = health_source(args.store) if prom else None  # the newest health run's verdicts (issue 33)
    return monitor(args.interval, args.count, args.json, prom_file=prom, health=health)


def command_app(args: argparse.Namespace) -> int:
    from rigcheck.engine.run.session import start_sampler

    served = os.environ.get("TEXTUAL_DRIVER", "").startswith("textual.drivers.web_driver")  # a `serve` tab
    if not served and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise UsageError("the app needs a terminal and this is not one; for a headless run use `rigcheck run`")
    from rigcheck.tui.app import RigcheckApp

    try:
        device = parse_device(args.device) if args.device else None
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.profile not in PROFILES:
        raise UsageError(f"bad profile {args.profile!r}: use one of {', '.join(PROFILES)}")
    python = args.python or sys.executable
    gpus: tuple[str, ...] | None = None
    if not args.python and device != "cpu" and surely_no_gpu():
        device = no_gpu_device(device)  # no torch could see a GPU here: told without importing one
    if args.python or device not in (None, "cpu"):  # a device or Python named: refused before the app opens
        device, gpus = run_devices(device, inspect_python(python))
    store = open_store(args.store)
    sampler = start_sampler()
    try:
        app = RigcheckApp(
            store,
            sampler,
            device=device,
            profile=args.profile,
            python=python,
            ascii_only=args.ascii,
            gpus=gpus,
            ask_gpus=device is None,  # the app draws at once and asks torch which GPUs it sees meanwhile
        )
        code = app.run()
        if code is None and app.return_code:  # Textual shows its own traceback, then returns None: never exit 0
            print("rigcheck: the app stopped on an internal error (above); the store keeps results", file=sys.stderr)
            code = EXIT_CRASH
        code = code or 0
        if app.left_running is not None:
            print(f"run {app.left_running} goes on in the background: `rigcheck` or `rigcheck follow` opens it again")
        return code
    finally:
        sampler.stop()


def command_stages(args: argparse.Namespace) -> int:

    for info in STAGES.values():
        print(f"{info.name:<12} {info.summary}")
    return 0


COMMANDS = {
    "run": command_run,
    "compare": command_compare,
    "export": command_export,
    "show": command_show,
    "history": command_history,
    "runs": command_history,
    "follow": command_follow,
    "cancel": command_cancel,
    "stages": command_stages,
    "monitor": command_monitor,
    "app": command_app,
    "serve": command_serve,
    "check": command_check,  # the passive gate (issue 33)
    "slurm-health": command_slurm_health,
    "references": command_references,
}


def global_end(argv: list[str]) -> int:
    """Where the options that come before a command (`--store X`, `--store=X`) end in argv."""
    index = 0
    while index < len(argv):
        if argv[index].startswith("--store="):
            index += 1
        elif argv[index] == "--store" and index + 1 < len(argv):
            index += 2
        else:
            break
    return index


def command_word(argv: list[str]) -> str | None:
    """The subcommand named in argv, past the options given before it (`--store X`, `--store=X`)."""
    end = global_end(argv)
    return argv[end] if end < len(argv) and not argv[end].startswith("-") else None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    end = global_end(argv)  # `rigcheck`, `rigcheck --device cuda:0`, `rigcheck --store X --device cpu`: the app
    if end == len(argv) or (argv[end].startswith("-") and argv[end] not in ("-h", "--help", "--version")):
        argv = [*argv[:end], "app", *argv[end:]]
    try:
        if command_word(argv) == "fleet":  # everything it does not know goes to the agents
            args, rest = build_parser().parse_known_args(argv)
            if args.store is not None:  # `rigcheck --store X fleet ...`: the agent keeps the store
                rest = ["--store", args.store, *rest]
            return command_fleet(args, rest)
        args = build_parser().parse_args(argv)
        if args.command is None:  # only `--store PATH` was given
            args = build_parser().parse_args([*argv, "app"])
        return COMMANDS[args.command](args)
    except (UsageError, StoreError) as error:  # StoreError: a store found damaged or read-only after opening
        said = f"rigcheck: {error}".encode("utf-8", "backslashreplace").decode("utf-8")  # never a second error
        print(said, file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # before a command took Ctrl-C over (its preflight, its imports): one line
        print("rigcheck: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
