"""The `rigcheck` command: parses arguments, runs stages headless or opens the app, and picks the exit code.

Exit codes: 0 all PASS/WARN/SKIP, 1 any FAIL, 3 any CRASH/TIMEOUT, 2 bad usage, 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class UsageError(Exception):
    """Bad input: printed as one line, exit code 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def build_parser() -> argparse.ArgumentParser:
    from rigcheck.engine.stage import PROFILES

    parser = _Parser(prog="rigcheck", description="Probe, verify and measure a GPU machine.")
    store_help = "results database (default: $RIGCHECK_STORE, else a per-user data folder)"
    parser.add_argument("--store", help=store_help)
    common = _Parser(add_help=False)
    common.add_argument("--store", default=argparse.SUPPRESS, help=store_help)
    commands = parser.add_subparsers(dest="command", parser_class=_Parser)

    run = commands.add_parser("run", help="run stages headless", parents=[common])
    run.add_argument("stages", nargs="*", metavar="STAGE", help="stages to run (default: all)")
    run.add_argument("--device", default="cpu", help="cpu, cuda:N or all (default cpu)")
    run.add_argument("--profile", default="standard", help=f"one of {', '.join(PROFILES)}")
    run.add_argument("--python", help="run the stages under this interpreter (it needs torch)")
    run.add_argument("--json", metavar="FILE", help="also write the run's report as JSON here")
    run.add_argument("--timeout", type=float, help="time limit per stage in seconds")
    run.add_argument(
        "--wait-quiet",
        type=float,
        metavar="SECONDS",
        help="before each throughput stage, wait for a quiet host",
    )
    run.add_argument("--no-telemetry", action="store_true", help="do not sample clocks and host load")
    run.add_argument("--max-find", action="store_true", help="matmul: also search shapes for the peak bf16 rate")
    run.add_argument("--compile", action="store_true", help="training: also measure torch.compile + channels_last")
    run.add_argument("--duration", type=float, metavar="SECONDS", help="burn: how long to run (default 30/60/300 s)")

    monitor = commands.add_parser("monitor", help="live telemetry for every GPU and the host")
    monitor.add_argument("--json", action="store_true", help="one JSON object per line")
    monitor.add_argument("--interval", type=float, default=1.0, help="seconds between samples")
    monitor.add_argument("--count", type=int, help="stop after this many samples")

    app = commands.add_parser("app", help="open the live app (the default with no command)", parents=[common])
    app.add_argument("--device", help="cpu, cuda:N or all (default: cuda:0 where a GPU is seen)")
    app.add_argument("--profile", default="standard", help=f"one of {', '.join(PROFILES)}")
    app.add_argument("--python", help="run the stages under this interpreter (it needs torch)")
    app.add_argument("--ascii", action="store_true", help="plain ASCII bars, for terminals without Unicode")

    commands.add_parser("stages", help="list the stages")
    history = commands.add_parser("history", help="list past runs", parents=[common])
    history.add_argument("--limit", type=int, default=30)
    show = commands.add_parser("show", help="show one run (a number or 'last')", parents=[common])
    show.add_argument("run")
    export = commands.add_parser("export", help="export one run", parents=[common])
    export.add_argument("run")
    export.add_argument("--format", default="json", help="json, csv or md")
    export.add_argument("--output", "-o", help="file to write (default: standard output)")
    return parser


def open_store(path: str | None):  # type: ignore[no-untyped-def]
    from rigcheck.engine.store import Store, StoreError, default_store_path

    try:
        return Store(Path(path).expanduser() if path else default_store_path())
    except StoreError as error:
        raise UsageError(str(error)) from None


def check_python(python: str) -> str:
    """The interpreter's torch version, or UsageError when it is not a Python with torch."""
    code = "import sys, torch; print(sys.version.split()[0], torch.__version__)"
    try:
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=180, check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise UsageError(f"--python {python}: cannot run it ({error})") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"--python {python}: not a Python with torch ({last})")
    return done.stdout.strip()


def resolve_run_id(store, text: str) -> int:  # type: ignore[no-untyped-def]
    if text in ("last", "latest"):
        run_id = store.latest_run_id()
        if run_id is None:
            raise UsageError(f"no runs in the store at {store.path}")
        return run_id
    try:
        run_id = int(text)
    except ValueError:
        raise UsageError(f"bad run {text!r}: give a run number or 'last'") from None
    if store.run(run_id) is None:
        raise UsageError(f"no run {run_id} in the store at {store.path}")
    return run_id


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def command_run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rigcheck.engine.export import to_json
    from rigcheck.engine.registry import UnknownStage, default_stages, resolve
    from rigcheck.engine.runner import RunPlan
    from rigcheck.engine.session import RunSession, start_sampler
    from rigcheck.engine.stage import PROFILES, parse_device

    from .cli_display import LiveDisplay, contention_table, measurements_table, summary_table

    try:
        infos = resolve(args.stages or list(default_stages(args.profile)))
        device = parse_device(args.device)
    except (UnknownStage, ValueError) as error:
        raise UsageError(str(error)) from None
    if args.profile not in PROFILES:
        raise UsageError(f"bad profile {args.profile!r}: use one of {', '.join(PROFILES)}")
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    if args.wait_quiet is not None and args.wait_quiet < 0:
        raise UsageError("--wait-quiet must be zero or more seconds")
    if args.duration is not None and not 0 < args.duration < 7 * 86400:
        raise UsageError("--duration must be a positive number of seconds (under a week)")
    python = sys.executable
    if args.python:
        check_python(args.python)
        python = args.python
    store = open_store(args.store)
    console = Console(stderr=True)
    run_id = store.begin_run([i.name for i in infos], device, args.profile, python, sys.argv[1:])
    log_dir = store.path.parent / "logs" / f"run-{run_id}"
    options: dict[str, object] = {name: True for name in ("max_find", "compile") if getattr(args, name)}
    if args.duration is not None:
        options["duration"] = args.duration
    plan = RunPlan(run_id, infos, device, args.profile, python, log_dir, options, timeout_s=args.timeout)
    interrupted = False
    sampler = None if args.no_telemetry else start_sampler()
    with LiveDisplay(console) as display:
        session = RunSession(store, plan, [display], sampler, args.wait_quiet)
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _raise_interrupt)
        session.start()
        try:
            while not session.wait(0.2):
                pass
        except KeyboardInterrupt:
            interrupted = True
            console.print("[magenta]interrupted: stopping the stage child[/]")
            session.cancel()
            session.wait(10)
    if sampler is not None:
        sampler.stop()
    code = EXIT_INTERRUPTED if interrupted else session.run.exit_code
    if interrupted:
        store.end_run(run_id, "interrupted", code)
    report = store.report(run_id)
    assert report is not None
    console.print(summary_table(report))
    table = measurements_table(report)
    if table is not None:
        console.print(table)
    contention = contention_table(report)
    if contention is not None:
        console.print(contention)
    console.print(f"run {run_id} stored in {store.path}; logs in {log_dir}")
    if args.json:
        try:
            Path(args.json).write_text(to_json(report))
        except OSError as error:
            console.print(f"[red]could not write {args.json}: {error}[/]")
            return code or EXIT_USAGE
    return code


def command_export(args: argparse.Namespace) -> int:
    from rigcheck.engine.export import FORMATS, render

    if args.format not in FORMATS:
        raise UsageError(f"bad format {args.format!r}: use one of {', '.join(FORMATS)}")
    store = open_store(args.store)
    report = store.report(resolve_run_id(store, args.run))
    assert report is not None
    text = render(report, args.format)
    if args.output:
        Path(args.output).write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def command_show(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .cli_display import contention_table, measurements_table, summary_table

    store = open_store(args.store)
    report = store.report(resolve_run_id(store, args.run))
    assert report is not None
    console = Console()
    run = report["run"]
    console.print(
        f"run {run['id']}: {run['status']}, device {run['device']}, profile {run['profile']}, "
        f"python {run['python']}, fingerprint {run['fingerprint']}"
    )
    console.print(summary_table(report))
    for table in (measurements_table(report), contention_table(report)):
        if table is not None:
            console.print(table)
    return 0


def command_history(args: argparse.Namespace) -> int:
    from rich.console import Console

    from .cli_display import history_table

    store = open_store(args.store)
    Console().print(history_table(store.runs(args.limit)))
    return 0


def command_monitor(args: argparse.Namespace) -> int:
    from .monitor import monitor

    if args.interval <= 0:
        raise UsageError("--interval must be a positive number of seconds")
    if args.count is not None and args.count < 1:
        raise UsageError("--count must be at least 1")
    return monitor(args.interval, args.count, args.json)


def command_app(args: argparse.Namespace) -> int:
    from rigcheck.engine.session import start_sampler
    from rigcheck.engine.stage import PROFILES, parse_device

    from .app import RigcheckApp

    try:
        device = parse_device(args.device) if args.device else None
    except ValueError as error:
        raise UsageError(str(error)) from None
    if args.profile not in PROFILES:
        raise UsageError(f"bad profile {args.profile!r}: use one of {', '.join(PROFILES)}")
    python = sys.executable
    if args.python:
        check_python(args.python)
        python = args.python
    store = open_store(args.store)
    sampler = start_sampler()
    try:
        app = RigcheckApp(store, sampler, device=device, profile=args.profile, python=python, ascii_only=args.ascii)
        return app.run() or 0
    finally:
        sampler.stop()


def command_stages(args: argparse.Namespace) -> int:
    from rigcheck.engine.registry import STAGES

    for info in STAGES.values():
        print(f"{info.name:<12} {info.summary}")
    return 0


COMMANDS = {
    "run": command_run,
    "export": command_export,
    "show": command_show,
    "history": command_history,
    "stages": command_stages,
    "monitor": command_monitor,
    "app": command_app,
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--store")):
        argv = ["app", *argv]  # `rigcheck` and `rigcheck --device cuda:0` open the app
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:  # only `--store PATH` was given
            args = build_parser().parse_args([*argv, "app"])
        return COMMANDS[args.command](args)
    except UsageError as error:
        print(f"rigcheck: {error}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
