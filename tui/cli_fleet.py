"""`rigcheck fleet`: starts torchrun with the right rendezvous for this host's agent (`python -m rigcheck.fleet`,
whose command line is engine/fleet/main.py) and hands it every argument it does not know."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import Any

from rigcheck.engine.run.preflight import UsageError


def launch_argv(args: argparse.Namespace, rest: list[str]) -> list[str]:
    """The torchrun command line `rigcheck fleet` starts on this host."""
    if args.nnodes < 1:
        raise UsageError("--nnodes must be 1 or more")
    host, _, port = args.endpoint.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(
            f"--endpoint {args.endpoint!r} must be HOST:PORT with a port from 1 to 65535 (the host that serves "
            "the rendezvous)"
        )
    argv = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        f"--nnodes={args.nnodes}",
        "--nproc-per-node=1",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={args.endpoint}",
        f"--rdzv-id={args.id}",
    ]
    if args.rendezvous_client:
        argv.append("--rdzv-conf=is_host=0")
    return [*argv, "-m", "rigcheck.fleet", *rest]


def command_fleet(args: argparse.Namespace, rest: list[str]) -> int:
    argv = launch_argv(args, rest)
    print(f"rigcheck fleet: {shlex.join(argv)}", file=sys.stderr, flush=True)
    os.execv(argv[0], argv)
    return 0  # not reached


def add_fleet_parser(commands: Any) -> None:
    fleet = commands.add_parser(
        "fleet",
        help="start this host's agent of a fleet run under torchrun (run it on every host)",
        description="Starts torchrun with a c10d rendezvous; every other argument goes to the agent "
        "(stages, --profile, --device, --store, the timeouts: see `python -m rigcheck.fleet --help`).",
    )
    fleet.add_argument(
        "--nnodes",
        type=int,
        required=True,
        help="how many hosts (torchrun's --nnodes: N or MIN:MAX not supported here)",
    )
    fleet.add_argument(
        "--endpoint", required=True, metavar="HOST:PORT", help="the rendezvous host and port, the same on every host"
    )
    fleet.add_argument(
        "--id", default="rigcheck", help="the rendezvous id, the same on every host (default %(default)s)"
    )
    fleet.add_argument(
        "--rendezvous-client",
        action="store_true",
        help="only join the rendezvous, never serve it (for every agent but the first when several run on one machine)",
    )
