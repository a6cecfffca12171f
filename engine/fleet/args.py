"""A fleet agent's command line and its checks, without the agent: `rigcheck fleet` checks an agent's arguments
before torchrun starts, and must not import what the agent imports (torch, for the store)."""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass

from rigcheck.engine.run.numbers import bounded_float
from rigcheck.engine.run.options import UsageParser, add_run_options, request_from_args
from rigcheck.engine.run.preflight import UsageError
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store


@dataclass(frozen=True)
class FleetOptions:
    """Every wait of a fleet run has an end; these are the flags that set them."""

    join_timeout: float = 300.0  # for an agent to announce itself after the rendezvous
    lost_after: float = 30.0  # heartbeat silence before an agent is lost
    phase_timeout: float = 3600.0  # for the live agents to reach the collectives
    collective_timeout: float = 60.0  # without a word from any rank during one collective
    links: bool = True
    pair_bytes: int = 0  # 0: by backend (64 MiB on NCCL, 4 MiB on gloo)


AGENT_EXIT_FILE_ENV = "RIGCHECK_FLEET_EXIT_FILE"  # where `rigcheck fleet` reads this agent's exit code
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


def check_agent_args(argv: list[str]) -> tuple[argparse.Namespace, FleetOptions, RunRequest, Store]:
    """An agent's arguments checked as the agent will (UsageError if bad): `rigcheck fleet` calls it before
    torchrun starts, so bad input is one line and exit 2 on this host rather than torchrun's report."""
    args = agent_parser().parse_args(argv)
    if args.detach:
        raise UsageError("a fleet agent runs in the foreground under torchrun or srun; --detach is for `run`")
    options = fleet_options(args)
    request, store = request_from_args(args)
    return args, options, request, store
