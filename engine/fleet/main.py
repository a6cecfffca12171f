"""The fleet agent's command line (`python -m rigcheck.fleet`): torchrun starts it on every host; rank 0 prints
the fleet's summary on stdout. Plain argparse and print: the agent runs headless, without the front ends."""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys

from rigcheck.engine.exits import EXIT_INTERRUPTED, EXIT_NO_STORE, EXIT_USAGE
from rigcheck.engine.fleet.agent import Agent, FleetOptions, FleetStoreError
from rigcheck.engine.fleet.env import FleetEnvError, read_env
from rigcheck.engine.report.fleet_summary import fleet_summary
from rigcheck.engine.run.numbers import bounded_float
from rigcheck.engine.run.options import UsageParser, add_run_options, request_from_args, write_reports
from rigcheck.engine.run.owner import DeviceBusy
from rigcheck.engine.run.preflight import UsageError

MAX_WAIT_S = 7 * 86400.0
WAITS = (
    ("join_timeout", "for every agent to announce itself"),
    ("lost_after", "heartbeat silence before an agent is called lost"),
    ("phase_timeout", "after the first host reaches the collectives, rank 0 starts them without the rest"),
    ("collective_timeout", "one collective without a word from any rank is a TIMEOUT"),
)


def add_fleet_timeouts(parser: argparse.ArgumentParser) -> None:
    defaults = FleetOptions()
    for name, meaning in WAITS:
        flag = "--" + name.replace("_", "-")
        default = getattr(defaults, name)
        parser.add_argument(
            flag,
            type=bounded_float(0, MAX_WAIT_S, above=True),
            default=default,
            metavar="S",
            help=f"{meaning} (default {default:g} s)",
        )
    parser.add_argument(
        "--no-links", action="store_true", help="skip the inter-host collectives and the pairwise round"
    )


def agent_parser() -> argparse.ArgumentParser:
    parser = UsageParser(
        prog="python -m rigcheck.fleet",
        description="One host's agent of a fleet run; start it on every host with torchrun (one per host).",
    )
    parser.add_argument("--store", help="this host's results database (default: $RIGCHECK_STORE, else per user)")
    add_run_options(parser)
    add_fleet_timeouts(parser)
    return parser


def fleet_options(args: argparse.Namespace) -> FleetOptions:
    for flag, _ in WAITS:
        value = getattr(args, flag)
        if not (math.isfinite(value) and 0 < value <= MAX_WAIT_S):
            raise UsageError(
                f"--{flag.replace('_', '-')} must be a number of seconds above 0 and at most {MAX_WAIT_S:g}"
            )
    return FleetOptions(
        args.join_timeout, args.lost_after, args.phase_timeout, args.collective_timeout, not args.no_links
    )


def stop_on_sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # torchrun stops its workers with SIGTERM


def agent_main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # c10d's retry warnings, C++ frames and all
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = agent_parser().parse_args(argv)
        if args.detach:
            raise UsageError("a fleet agent runs in the foreground under torchrun or srun; --detach is for `run`")
        try:
            env = read_env()
        except FleetEnvError as error:
            raise UsageError(str(error)) from None
        options = fleet_options(args)
        request, store = request_from_args(args)
    except UsageError as error:
        print(f"rigcheck fleet: {error}", file=sys.stderr)
        return EXIT_USAGE
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    agent = Agent(env, store, request, options)
    try:
        code = agent.run()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except DeviceBusy as error:
        print(
            f"rigcheck fleet [{env.node}]: {str(error).split(':')[0]}: agents that share a machine need a store "
            "each (RIGCHECK_STORE or --store)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    except FleetStoreError as error:
        print(f"rigcheck fleet [{env.node}]: {error}", file=sys.stderr)
        return EXIT_NO_STORE
    shown = agent.fleet_run_id if agent.fleet_run_id is not None else agent.local_run_id
    report = store.report(shown) if shown is not None else None
    if report is not None:
        if agent.fleet_run_id is not None:
            print(fleet_summary(report))
            print(f"fleet run {agent.fleet_run_id} stored in {store.path}", file=sys.stderr)
        write_reports(args, report, lambda text: print(text, file=sys.stderr))
    return code
