"""The options of a headless run, which `rigcheck run` and a fleet agent both take: the argparse table, the
request they make, and the report files they ask for."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, NoReturn

from rigcheck.engine.hw.gpu_nodes import surely_no_gpu
from rigcheck.engine.measure.baseline_file import parse_baseline
from rigcheck.engine.measure.small_file import read_small
from rigcheck.engine.registry import UnknownStage, default_stages, resolve
from rigcheck.engine.report.atomic_write import write_atomic
from rigcheck.engine.report.export import to_json
from rigcheck.engine.report.junit import to_junit
from rigcheck.engine.run.given import GivenError, checked, file_path, nonempty
from rigcheck.engine.run.numbers import WEEK_S, bounded_float
from rigcheck.engine.run.preflight import (
    PYTHON_TIMEOUT_S,
    STDOUT,
    UsageError,
    check_output_file,
    inspect_python,
    no_gpu_device,
    open_store,
    run_devices,
)
from rigcheck.engine.run.profile_words import profile_help
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.warm_pool import park_early, parked_answer
from rigcheck.engine.stage import PROFILES, parse_device
from rigcheck.engine.store import Store
from rigcheck.engine.store.folders import FolderRefused
from rigcheck.engine.store.given_file import check_given_file


class UsageParser(argparse.ArgumentParser):
    """An argument parser whose complaint is a UsageError: one line and exit 2, like any other bad input."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """The options of `rigcheck run`, which a fleet agent takes too."""
    parser.add_argument("stages", nargs="*", metavar="STAGE", help="stages to run (default: all)")
    parser.add_argument(
        "--device",
        type=nonempty,
        help="cpu, cuda:N, a list like cuda:0,cuda:3, or all (default: every GPU torch sees, else cpu)",
    )
    parser.add_argument(
        "--serial", action="store_true", help="on several GPUs, measure one after another, not all at once"
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="start every stage in a fresh interpreter (slower: about 3 s each); by default one warm child "
        "per device runs the stages one after another, and a crashed one is replaced",
    )
    parser.add_argument(
        "--peer-tolerance",
        type=bounded_float(0, 100, above=True, below=True, unit=" (a percentage)"),
        metavar="PERCENT",
        help="name a GPU more than this far off the median of its peers of the same model, either way, and beyond 3 "
        "scaled MADs of them; of only two, the slower (default 10)",
    )
    parser.add_argument(
        "--baseline",
        type=nonempty,
        metavar="FILE",
        help="judge each GPU figure (and a CPU-only run's CPU figures) against this known-good machine's or fleet's "
        "(`export RUN --format baseline`), not the model table's",
    )
    parser.add_argument("--profile", default="standard", help=profile_help())
    parser.add_argument("--python", type=nonempty, help="run the stages under this interpreter (it needs torch)")
    parser.add_argument(
        "--json", type=nonempty, metavar="FILE", help="also write the run's report as JSON here (- for stdout)"
    )
    parser.add_argument(
        "--junit",
        type=nonempty,
        metavar="FILE",
        help="also write JUnit XML here: one test case per verdict, for CI (- for stdout)",
    )
    parser.add_argument("--strict", action="store_true", help="a WARN verdict fails the run (exit 1), for CI")
    parser.add_argument("--timeout", type=bounded_float(0, WEEK_S, above=True), help="time limit per stage in seconds")
    parser.add_argument(
        "--wait-quiet",
        type=bounded_float(0, WEEK_S),
        metavar="SECONDS",
        help="before each throughput stage, wait for a quiet host",
    )
    parser.add_argument("--no-telemetry", action="store_true", help="do not sample clocks and host load")
    parser.add_argument(
        "--detach", action="store_true", help="run in a background engine: the terminal can close; see `follow`"
    )
    parser.add_argument("--force", action="store_true", help="run even on a device another live run is using")
    parser.add_argument("--max-find", action="store_true", help="matmul: also search shapes for the peak bf16 rate")
    parser.add_argument("--compile", action="store_true", help="training: also measure torch.compile + channels_last")
    parser.add_argument(
        "--duration",
        type=bounded_float(0, WEEK_S, above=True, below=True),
        metavar="SECONDS",
        help="burn: how long to run (default 30/60/300 s)",
    )


BASELINE_FILE_MAX_BYTES = 16 << 20  # the figures kept are capped far lower (baseline_file.BASELINE_MAX_BYTES)


def read_baseline(path: str) -> dict[str, Any]:
    """A --baseline file's figures, checked before the run; UsageError (one line, exit 2) when it will not do:
    a FIFO, a device or a file over 16 MiB is refused unread, and a nesting too deep is said so."""
    try:
        given = file_path(path, "--baseline")
        check_given_file(given)
        text = read_small(given).decode("utf-8")
    except FolderRefused as refused:
        raise UsageError(f"--baseline {path}: {refused}") from None
    except GivenError as error:
        raise UsageError(str(error)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"--baseline {path}: cannot read it ({getattr(error, 'strerror', None) or error})") from None
    try:
        return checked(parse_baseline, text)  # type: ignore[return-value]
    except ValueError as error:
        raise UsageError(f"--baseline {path}: {error}") from None


def check_report_files(args: argparse.Namespace) -> None:
    """--json and --junit can be written, tried before the run; `-` (standard output) for one of them at most."""
    flags = [flag for flag in ("json", "junit") if getattr(args, flag) is not None]
    if flags and getattr(args, "detach", False):  # the detached engine writes no report files: say so now
        named = " and ".join(f"--{flag}" for flag in flags)
        raise UsageError(
            f"{named} with --detach: a detached run writes no report file; once it ends, "
            "write one with `rigcheck export RUN --format json -o FILE` (or --format junit)"
        )
    if sum(getattr(args, flag) == STDOUT for flag in flags) > 1:
        raise UsageError("--json - and --junit -: only one report can go to standard output")
    for flag in flags:
        check_output_file(f"--{flag}", getattr(args, flag))


def request_from_args(args: argparse.Namespace, early_child: bool = False) -> tuple[RunRequest, Store]:
    """Check `run`'s options and turn them into a RunRequest and the store it goes to (UsageError if bad).

    `early_child`: once the options are checked, start the run's first stage child (warm_pool.park_early):
    it imports torch once, answers the preflight's question about the interpreter's GPUs, and then runs
    the first stage, where otherwise a second interpreter would import torch only to answer it."""
    try:
        infos = resolve(args.stages or list(default_stages(args.profile)))
        device = parse_device(args.device) if args.device else None
    except (UnknownStage, ValueError) as error:
        raise UsageError(str(error)) from None
    if args.profile not in PROFILES:
        raise UsageError(f"bad profile {args.profile!r}: use one of {', '.join(PROFILES)}")
    # The parser's types check these too; a Namespace made by code is checked here.
    if args.timeout is not None and not 0 < args.timeout <= WEEK_S:
        raise UsageError("--timeout must be a positive number of seconds (at most a week)")
    if args.wait_quiet is not None and not 0 <= args.wait_quiet <= WEEK_S:
        raise UsageError("--wait-quiet must be zero or more seconds (at most a week)")
    check_report_files(args)
    if args.duration is not None and not 0 < args.duration < WEEK_S:
        raise UsageError("--duration must be a positive number of seconds (under a week)")
    if args.peer_tolerance is not None and not 0 < args.peer_tolerance < 100:
        raise UsageError("--peer-tolerance must be a percentage between 0 and 100")
    baseline = read_baseline(args.baseline) if getattr(args, "baseline", None) is not None else None
    python = args.python or sys.executable
    gpus: tuple[str, ...] = ()
    asked = None
    if not args.python and device != "cpu" and surely_no_gpu():
        device = no_gpu_device(device)  # no torch could see a GPU here: answered without importing one
    if early_child:
        park_early(python)
        asked = partial(parked_answer, python, PYTHON_TIMEOUT_S)
    if args.python or device != "cpu":
        device, gpus = run_devices(device, inspect_python(python, asked))
    device = device or "cpu"
    store = open_store(args.store)
    options: dict[str, object] = {name: True for name in ("max_find", "compile") if getattr(args, name)}
    if args.duration is not None:
        options["duration"] = args.duration
    if baseline is not None:
        options["baseline"] = baseline  # the parent judges every figure with it, the matmul child its best-of verdicts
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
        cold=bool(getattr(args, "cold", False)),
        strict=bool(getattr(args, "strict", False)),
    )
    return request, store


def write_reports(args: argparse.Namespace, report: dict[str, Any], say: Callable[[str], None]) -> bool:
    """Write the --json and --junit files (`-`: standard output), each replaced in one step; False, having
    said why, when one could not be written."""
    ok = True
    for path, render in ((args.json, lambda: to_json(report)), (args.junit, lambda: to_junit(report, args.strict))):
        if not path:
            continue
        try:
            if path == STDOUT:
                sys.stdout.write(render())
                sys.stdout.flush()
            else:
                write_atomic(Path(path).expanduser(), render())
        except OSError as error:  # checked before the run: a disk that filled up since, or a path swapped
            say(f"rigcheck: could not write {path}: {error.strerror or error}")
            ok = False
    return ok
