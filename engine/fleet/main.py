"""The fleet agent's command line (`python -m rigcheck.fleet`): torchrun starts it on every host; rank 0 prints
the fleet's summary on stdout. Plain argparse and print: the agent runs headless, without the front ends."""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
from contextlib import suppress

from rigcheck.engine.exits import EXIT_INTERRUPTED, EXIT_NO_STORE, EXIT_USAGE
from rigcheck.engine.fleet.agent import Agent, FleetOptions, FleetStoreError, refuse_early
from rigcheck.engine.fleet.channel import StoreTampered
from rigcheck.engine.fleet.env import FleetEnv, FleetEnvError, read_env
from rigcheck.engine.fleet.seal import FleetKeyError, take_key
from rigcheck.engine.report.fleet_summary import fleet_summary
from rigcheck.engine.run.numbers import bounded_float
from rigcheck.engine.run.options import UsageParser, add_run_options, request_from_args, write_reports
from rigcheck.engine.run.owner import DeviceBusy
from rigcheck.engine.run.preflight import UsageError
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store

EXIT_FILE_ENV = "RIGCHECK_FLEET_EXIT_FILE"  # where `rigcheck fleet` reads this agent's exit code
MAX_WAIT_S = 7 * 86400.0
REFUSAL_WAIT_S = 60.0  # for rank 0's store, to say why this agent refused (rank 0 may still be starting)
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


def check_agent_args(argv: list[str]) -> tuple[argparse.Namespace, FleetOptions, RunRequest, Store]:
    """An agent's arguments checked as the agent will (UsageError if bad): `rigcheck fleet` calls it before
    torchrun starts, so bad input is one line and exit 2 on this host rather than torchrun's report."""
    args = agent_parser().parse_args(argv)
    if args.detach:
        raise UsageError("a fleet agent runs in the foreground under torchrun or srun; --detach is for `run`")
    options = fleet_options(args)
    request, store = request_from_args(args)
    return args, options, request, store


def agent_main(argv: list[str] | None = None) -> int:
    """The agent's exit code, also written where `rigcheck fleet` reads it (torchrun itself exits 1 for any
    failure of its worker)."""
    exit_file = os.environ.pop(EXIT_FILE_ENV, "")
    code = _agent_main(sys.argv[1:] if argv is None else argv)
    if exit_file:
        with suppress(OSError), open(exit_file, "w") as out:
            out.write(f"{code}\n")
    return code


def _agent_main(argv: list[str]) -> int:
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # c10d's retry warnings, C++ frames and all
    env: FleetEnv | None = None
    key: bytes | None = None
    try:
        agent_parser().parse_args(argv)  # `--help`, and a bad flag said before a missing launcher
        try:
            env = read_env()
            key = take_key()
        except (FleetEnvError, FleetKeyError) as error:
            raise UsageError(str(error)) from None
        args, options, request, store = check_agent_args(argv)
    except UsageError as error:
        print(f"rigcheck fleet: {error}", file=sys.stderr)
        if env is not None and key is not None:  # rank 0 quotes it, rather than wait for this host in vain
            refuse_early(env, key, str(error), REFUSAL_WAIT_S)
        return EXIT_USAGE
    assert env is not None and key is not None
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    agent = Agent(env, store, request, options, key)
    try:
        code = agent.run()
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except DeviceBusy as error:
        text = f"{str(error).split(':')[0]}: agents that share a machine need a store each (RIGCHECK_STORE or --store)"
        print(f"rigcheck fleet [{env.node}]: {text}", file=sys.stderr)
        agent.refuse(text)
        return EXIT_USAGE
    except FleetStoreError as error:
        print(f"rigcheck fleet [{env.node}]: {error}", file=sys.stderr)
        return EXIT_NO_STORE
    except StoreTampered as error:
        print(f"rigcheck fleet [{env.node}]: {error}; this host's results are whole in its own store", file=sys.stderr)
        return EXIT_NO_STORE
    shown = agent.fleet_run_id if agent.fleet_run_id is not None else agent.local_run_id
    report = store.report(shown) if shown is not None else None
    if report is not None:
        if agent.fleet_run_id is not None:
            print(fleet_summary(report))
            print(f"fleet run {agent.fleet_run_id} stored in {store.path}", file=sys.stderr)
        write_reports(args, report, lambda text: print(text, file=sys.stderr))
    return code
