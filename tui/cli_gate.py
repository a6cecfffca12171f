"""`rigcheck check` and `rigcheck slurm-health`: the passive gate from the command line. The check runs in a thread
under --timeout, so a wedged driver gives UNKNOWN in time, and slurm-health drains on it as on any failure (Slurm
ignores a health program's exit code: only its scontrol drains); and `history --gpu`, one GPU's timeline."""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rigcheck.engine.gate.outcome import OK, STYLE_CODES, UNKNOWN, WARN, could_not_check, fit, printable
from rigcheck.engine.run.numbers import bounded_float, bounded_int, given
from rigcheck.engine.run.preflight import UsageError

DEFAULT_TIMEOUT_S = 20.0  # below NHC's 30 s watchdog, Slurm's 60 s limit and the NPD example's 25 s
KEEP_WAIT_S = 5.0  # keeping the check after the answer: 20 + 2 x 15 (scontrol) + 5 stays inside Slurm's 60 s


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
    parser.add_argument(
        "--kernel-log",
        type=given("a saved kernel log"),
        metavar="FILE",
        help="read XIDs from this saved `dmesg` output instead of /dev/kmsg (not syslog: any user can log there)",
    )
    parser.add_argument(
        "--timeout",
        type=bounded_float(0.5, 3600.0),
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help=f"give UNKNOWN after S seconds (default {DEFAULT_TIMEOUT_S:g}); slurm-health then drains the node",
    )
    parser.add_argument("--no-store", action="store_true", help="judge only: keep no run, compare with no history")
    parser.add_argument(
        "--verbose",
        "-v",
        action="store_true",
        help="every verdict, not only the WARN, FAIL and the checks that could not be read",
    )


def add_gate_parsers(commands: Any, common: argparse.ArgumentParser) -> None:
    check = commands.add_parser(
        "check", help="passive health check for schedulers (no torch, under a second)", parents=[common]
    )
    add_gate_options(check)
    slurm = commands.add_parser("slurm-health", help="check, then drain or resume this Slurm node", parents=[common])
    add_gate_options(slurm)
    slurm.add_argument(
        "--node",
        type=given("one Slurm node name"),
        help="this node's Slurm name, one node only (default: $SLURMD_NODENAME, else the short host name)",
    )
    slurm.add_argument(
        "--dry-run",
        action="store_true",
        help="say what scontrol would be asked (a drain on CRITICAL, UNKNOWN or a --timeout), and ask nothing",
    )


def _open_store(store_arg: str | None) -> tuple[Any | None, str | None]:
    """The store, or None and why not: a store that cannot be opened (a full disk, a damaged or refused file)
    costs the gate its memory, never its answer."""
    from rigcheck.engine.run.preflight import open_store

    try:
        return open_store(store_arg), None
    except Exception as error:  # UsageError, StoreError, a non-UTF-8 SQLite message: all the same to the gate
        return None, f"store not used: {fit(str(error), 200)}"


def _run_check(args: argparse.Namespace) -> Any:
    """Read and judge the node; the store only for its history (the check is kept once the gate has acted)."""
    from rigcheck.engine.gate.passive import passive_check

    kernel_log = Path(args.kernel_log) if args.kernel_log is not None else None
    store, why = (None, None) if args.no_store else _open_store(args.store)
    argv = ["check", *sys.argv[2:]] if sys.argv[1:2] else ["check"]
    result = passive_check(store, args.expect_gpus, kernel_log, args.expect_idle, argv, store_after=False)
    result.store_error = why or result.store_error
    return result


def timed_out(seconds: float) -> Any:
    """The check that did not finish: UNKNOWN, with a cause a drain reason can show in its first 20 characters."""
    from rigcheck.engine.events import Status
    from rigcheck.engine.gate.checks import verdict
    from rigcheck.engine.gate.passive import GateResult
    from rigcheck.engine.gate.read import NodeReading

    why = f"the check did not finish in {seconds:g} s (a wedged driver?)"
    line = fit(f"{UNKNOWN}: {why}")
    found = verdict("finished", "node", Status.TIMEOUT, why, "check timed out", {"timeout_s": seconds})
    facts = {"gate": {"state": UNKNOWN, "summary": line, "count": None, "unknown": [why], "timed_out": seconds}}
    result = GateResult(UNKNOWN, line, [found], NodeReading(unknown=[why]), facts=facts)
    result.cause = f"hung driver? no answer in {seconds:g} s"
    return result


def _check_input(args: argparse.Namespace) -> None:
    """Bad input is one line and exit 2 before anything is read: a --kernel-log that is not a regular file (a FIFO
    would block the read) or whose name the system refuses."""
    if args.kernel_log is None:
        return
    try:
        regular = Path(args.kernel_log).is_file()
    except OSError as error:
        raise UsageError(f"--kernel-log: {error.strerror or error}") from None
    if not regular:
        raise UsageError(f"--kernel-log {fit(args.kernel_log, 120)!r}: not a readable file")


def _judged_in_time(args: argparse.Namespace) -> tuple[Any, bool]:
    """(the result, whether the check finished) within --timeout: the check runs in a thread of its own, since
    an NVML call on a wedged GPU can block for minutes, and the gate must still answer and act."""
    _check_input(args)
    box: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["result"] = _run_check(args)
        except BaseException as error:  # handed to the main thread: bad input stays one line and exit 2
            box["error"] = error
        finally:
            done.set()

    threading.Thread(target=work, name="rigcheck-gate-check", daemon=True).start()
    if not done.wait(args.timeout):
        return timed_out(args.timeout), False
    if "error" in box:
        raise box["error"]
    return box["result"], True


def _print(result: Any, verbose: bool, style: str) -> None:
    """The summary line first; the details after it, on stderr for npd, which takes all of stdout as the message."""
    print(result.line, flush=True)
    details = sys.stderr if style == "npd" else sys.stdout
    for verdict in result.verdicts:
        if verbose or verdict.status.value not in ("PASS", "SKIP") or could_not_check(verdict):
            print(printable(f"{verdict.status.value:<5} {verdict.check:<14} {verdict.explanation}"), file=details)
    for why in result.reading.unknown:
        print(printable(f"UNKNOWN {why}"), file=details)
    details.flush()


def _keep(args: argparse.Namespace, result: Any) -> bool:
    """Keep the check in the store's timeline, after the answer and the action, in at most KEEP_WAIT_S: a held or
    slow store costs the memory, never the deadline a scheduler gives the check. Whether keeping ended."""
    if args.no_store:
        return True

    def work() -> None:
        from rigcheck.engine.gate.passive import keep

        store, why = _open_store(args.store)
        if store is None:
            result.store_error = why
            return
        argv = ["check", *sys.argv[2:]] if sys.argv[1:2] else ["check"]
        keep(store, result, argv)

    thread = threading.Thread(target=work, name="rigcheck-gate-keep", daemon=True)
    thread.start()
    thread.join(KEEP_WAIT_S)
    ended = not thread.is_alive()
    if not ended:
        result.store_error = f"not stored: the store did not answer in {KEEP_WAIT_S:g} s"
    if result.store_error:
        print(f"note: {result.store_error}", file=sys.stderr)
    elif result.run_id is not None:
        print(f"run {result.run_id} stored", file=sys.stderr)
    return ended


def _leave(code: int, finished: bool) -> int:
    """The exit code; after a timeout (the check's or the store's) the process leaves at once: the thread stuck
    in a wedged driver or a held store may never return."""
    if not finished:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def command_check(args: argparse.Namespace) -> int:
    result, finished = _judged_in_time(args)
    _print(result, args.verbose, args.exit_style)
    kept = _keep(args, result)
    return _leave(result.code(args.exit_style), finished and kept)


def command_slurm_health(args: argparse.Namespace) -> int:
    from rigcheck.engine.gate.slurm import BadNode, act, node_name

    try:
        node = node_name(args.node)  # bad input before anything is read or asked
    except BadNode as error:
        raise UsageError(str(error)) from None
    result, finished = _judged_in_time(args)
    _print(result, args.verbose, args.exit_style)
    said, _ = act(node, result.state, getattr(result, "cause", None) or result.line, dry_run=args.dry_run)
    print(f"slurm: {said}", file=sys.stderr, flush=True)
    result.facts.setdefault("gate", {})["slurm"] = said
    kept = _keep(args, result)
    # a node that may take work exits 0 whatever the style: a WARN must not fail a job's prolog
    # (a scontrol that failed is said on stderr; a failing node's code is non-zero already)
    return _leave(0 if result.state in (OK, WARN) else result.code(args.exit_style), finished and kept)


def command_gpu_history(args: argparse.Namespace) -> int:
    from rigcheck.engine.gate.timeline import gpu_timeline
    from rigcheck.engine.run.preflight import open_store

    if not (args.gpu.isascii() and args.gpu.isprintable()):  # a GPU UUID is plain ASCII ("GPU-9b25...")
        raise UsageError(f"--gpu {args.gpu!a}: not a GPU UUID (plain ASCII, as nvidia-smi -L prints it)")
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


def command_check_history(args: argparse.Namespace) -> int:
    """`history --checks`: the gate's kept checks, newest first, each with the gate's own state and line."""
    import time

    from rigcheck.engine.run.preflight import open_store
    from rigcheck.engine.store.history import checks

    rows = checks(open_store(args.store), args.limit)
    if not rows:
        print("no health check kept in this store (`rigcheck check` keeps one per check that changed something)")
        return 0
    print(f"{'run':>6}  {'when':<16}  {'state':<8}  summary")
    for row in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row["started"])) if row["started"] else "-"
        print(f"{row['id']:>6}  {when:<16}  {row['state']:<8}  {fit(row['summary'], 200)}")
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
