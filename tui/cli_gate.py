"""`rigcheck check` and `rigcheck slurm-health`: the passive gate from the command line, with a watchdog so a
wedged driver gives UNKNOWN in time rather than a scheduler's kill; and `history --gpu`, one GPU's timeline."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rigcheck.engine.gate.outcome import OK, STYLE_CODES, UNKNOWN, WARN, could_not_check, exit_code, fit
from rigcheck.engine.run.numbers import bounded_float, bounded_int
from rigcheck.engine.run.preflight import UsageError

DEFAULT_TIMEOUT_S = 20.0  # below NHC's 30 s watchdog, Slurm's 60 s limit and the NPD example's 25 s


def add_gate_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--expect-gpus",
        type=bounded_int(0),
        metavar="N",
        help="GPUs this node must have (default: as many as its last clean check found)",
    )
    parser.add_argument(
        "--exit-style",
        choices=tuple(STYLE_CODES),
        default="rigcheck",
        help="exit codes: rigcheck (0 OK/WARN, 1 CRITICAL, 7 UNKNOWN), nagios (0/1/2/3), "
        "npd (node-problem-detector: 0 OK, 1 problem, 2 unknown)",
    )
    parser.add_argument("--expect-idle", action="store_true", help="a process on a GPU is a WARN (job prologs)")
    parser.add_argument("--kernel-log", metavar="FILE", help="read XIDs from this saved log instead of /dev/kmsg")
    parser.add_argument(
        "--timeout",
        type=bounded_float(0.5, 3600.0),
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"give UNKNOWN after S seconds (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument("--no-store", action="store_true", help="judge only: keep no run, compare with no history")
    parser.add_argument(
        "--verbose", "-v", action="store_true", help="every verdict, not only the WARN, FAIL and unread"
    )


def add_gate_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    check = commands.add_parser(
        "check", help="passive health check for schedulers (no torch, under a second)", parents=[common]
    )
    add_gate_options(check)
    slurm = commands.add_parser("slurm-health", help="check, then drain or resume this Slurm node", parents=[common])
    add_gate_options(slurm)
    slurm.add_argument("--node", help="the Slurm node name (default: $SLURMD_NODENAME, else the short host name)")
    slurm.add_argument("--dry-run", action="store_true", help="say what scontrol would be asked, and ask nothing")


def _watchdog(seconds: float, style: str) -> threading.Timer:
    """After `seconds`, print UNKNOWN and leave at once: an NVML call on a wedged GPU can block for minutes."""

    def fire() -> None:
        sys.stdout.write(fit(f"{UNKNOWN}: the check did not finish in {seconds:g} s (a wedged driver?)") + "\n")
        sys.stdout.flush()
        os._exit(exit_code(UNKNOWN, style))

    timer = threading.Timer(seconds, fire)
    timer.daemon = True
    timer.start()
    return timer


def _run_check(args: argparse.Namespace) -> Any:
    from rigcheck.engine.gate.passive import passive_check

    kernel_log = Path(args.kernel_log) if args.kernel_log else None
    if kernel_log is not None and not kernel_log.is_file():
        raise UsageError(f"--kernel-log {args.kernel_log}: not a readable file")
    store = None
    if not args.no_store:
        from rigcheck.engine.run.preflight import open_store

        store = open_store(args.store)
    argv = ["check", *sys.argv[2:]] if sys.argv[1:2] else ["check"]
    return passive_check(store, args.expect_gpus, kernel_log, args.expect_idle, argv)


def _print(result: Any, verbose: bool, style: str) -> None:
    """The summary line first; the details after it, on stderr for npd, which takes all of stdout as the message."""
    print(result.line, flush=True)
    details = sys.stderr if style == "npd" else sys.stdout
    for verdict in result.verdicts:
        if verbose or verdict.status.value not in ("PASS", "SKIP") or could_not_check(verdict):
            print(f"{verdict.status.value:<5} {verdict.check:<14} {verdict.explanation}", file=details)
    for why in result.reading.unknown:
        print(f"UNKNOWN {why}", file=details)
    if result.store_error:
        print(f"note: {result.store_error}", file=sys.stderr)
    elif result.run_id is not None:
        print(f"run {result.run_id} stored", file=sys.stderr)


def _checked_and_printed(args: argparse.Namespace) -> Any:
    """The passive check under its watchdog, printed in the style asked: what `check` and `slurm-health` share."""
    timer = _watchdog(args.timeout, args.exit_style)
    try:
        result = _run_check(args)
    finally:
        timer.cancel()
    _print(result, args.verbose, args.exit_style)
    return result


def command_check(args: argparse.Namespace) -> int:
    return _checked_and_printed(args).code(args.exit_style)


def command_slurm_health(args: argparse.Namespace) -> int:
    from rigcheck.engine.gate.slurm import act, node_name

    result = _checked_and_printed(args)
    said, _ = act(node_name(args.node), result.state, result.line, dry_run=args.dry_run)
    print(f"slurm: {said}", file=sys.stderr)
    # a node that may take work exits 0 whatever the style: a WARN must not fail a job's prolog
    # (a scontrol that failed is said on stderr; a failing node's code is non-zero already)
    return 0 if result.state in (OK, WARN) else result.code(args.exit_style)


def command_gpu_history(args: argparse.Namespace) -> int:
    from rigcheck.engine.gate.timeline import gpu_timeline
    from rigcheck.engine.run.preflight import open_store

    rows = gpu_timeline(open_store(args.store), args.gpu)
    if not rows:
        raise UsageError(f"no run in the store has a GPU with UUID {args.gpu!r}")  # repr: no terminal escape echoed
    print(f"{'run':>5}  {'when':<16}  {'kind':<8}  {'ECC corr':>8}  {'uncorr':>6}  {'remap':>5}  {'PCIe':<9}  XIDs")
    for row in rows:
        print(
            f"{row['run']:>5}  {row['when']:<16}  {row['kind']:<8}  {row['corrected']:>8}  {row['uncorrected']:>6}  "
            f"{row['remapped']:>5}  {row['pcie']:<9}  {row['xids']}"
        )
    return 0


def health_source(store_arg: str | None) -> Callable[[], dict[str, Any] | None]:
    """For `monitor --prom-textfile`: the newest health run's report, read again only when a newer run lands.
    A store that is not there (it is never made for this) or cannot be read gives None: the monitor goes on."""
    from rigcheck.engine.report.prom_health import latest_health_run
    from rigcheck.engine.store import STORE_ENV, Store, default_store_path

    named = store_arg or os.environ.get(STORE_ENV)
    path = Path(named).expanduser() if named else default_store_path()
    held: dict[str, Any] = {}

    def newest() -> dict[str, Any] | None:
        if not path.is_file():
            return None
        try:
            if "store" not in held:
                held["store"] = Store(path)
            run_id = latest_health_run(held["store"])
            if run_id is not None and held.get("run_id") != run_id:
                held["report"], held["run_id"] = held["store"].report(run_id), run_id
        except Exception:  # a store being written, locked or damaged: the telemetry still goes out
            return held.get("report")
        return held.get("report")

    return newest
