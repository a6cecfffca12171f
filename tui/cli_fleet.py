"""Fleet front ends: the agent torchrun starts on each host (`python -m rigcheck.fleet`), and `rigcheck fleet`,
which starts torchrun with the right rendezvous for you. Rank 0 prints the fleet's summary on stdout."""

from __future__ import annotations

import argparse
import math
import os
import shlex
import signal
import sys
from typing import Any

from rigcheck.engine.exits import EXIT_INTERRUPTED, EXIT_NO_STORE, EXIT_USAGE
from rigcheck.tui.preflight import UsageError

MAX_WAIT_S = 7 * 86400.0


def add_fleet_timeouts(parser: argparse.ArgumentParser) -> None:
    from rigcheck.engine.fleet.agent import FleetOptions

    defaults = FleetOptions()
    waits = (
        ("join_timeout", "for every agent to announce itself"),
        ("lost_after", "heartbeat silence before an agent is called lost"),
        ("phase_timeout", "after the first host reaches the collectives, rank 0 starts them without the rest"),
        ("collective_timeout", "one collective without a word from any rank is a TIMEOUT"),
    )
    for name, meaning in waits:
        flag = "--" + name.replace("_", "-")
        default = getattr(defaults, name)
        parser.add_argument(flag, type=float, default=default, metavar="S", help=f"{meaning} (default {default:g} s)")
    parser.add_argument(
        "--no-links", action="store_true", help="skip the inter-host collectives and the pairwise round"
    )


def agent_parser() -> argparse.ArgumentParser:
    from rigcheck.tui.cli import _Parser, add_run_options

    parser = _Parser(
        prog="python -m rigcheck.fleet",
        description="One host's agent of a fleet run; start it on every host with torchrun (one per host).",
    )
    parser.add_argument("--store", help="this host's results database (default: $RIGCHECK_STORE, else per user)")
    add_run_options(parser)
    add_fleet_timeouts(parser)
    return parser


def fleet_options(args: argparse.Namespace) -> Any:
    from rigcheck.engine.fleet.agent import FleetOptions

    for flag in ("join_timeout", "lost_after", "phase_timeout", "collective_timeout"):
        value = getattr(args, flag)
        if not (math.isfinite(value) and 0 < value <= MAX_WAIT_S):
            raise UsageError(
                f"--{flag.replace('_', '-')} must be a number of seconds above 0 and at most {MAX_WAIT_S:g}"
            )
    return FleetOptions(
        args.join_timeout, args.lost_after, args.phase_timeout, args.collective_timeout, not args.no_links
    )


def agent_main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # c10d's retry warnings, C++ frames and all
    from rigcheck.engine.fleet.agent import Agent, FleetStoreError
    from rigcheck.engine.fleet.env import FleetEnvError, read_env
    from rigcheck.engine.run.owner import DeviceBusy
    from rigcheck.tui.cli_run import raise_interrupt, request_from_args, write_reports

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
    signal.signal(signal.SIGTERM, raise_interrupt)  # torchrun stops its workers with SIGTERM
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
        from rich.console import Console

        write_reports(args, report, Console(stderr=True))
    return code


def fleet_summary(report: dict[str, Any]) -> str:
    """Plain text: each host's state and stages, the fleet's own verdicts, and the inter-host figures."""
    fleet = report.get("fleet") or {}
    states = fleet.get("states") or {}
    lines = [
        f"fleet run {report['run']['id']}: {len(fleet.get('hosts', []))} host(s), profile {report['run']['profile']}"
    ]
    for host in fleet.get("hosts", []):
        stages = [f"{s['name']} {s['status']}" for s in report["stages"] if s["host"] == host]
        lines.append(f"  {host:<16} {states.get(host, '?'):<8} {', '.join(stages) or 'no stage reported'}")
    fleet_rows = [v for v in report["verdicts"] if v["stage"] in ("fleet", "fleet-links")]
    checked = [v for v in fleet_rows if v["stage"] == "fleet-links" and v["status"] == "PASS" and v["host"]]
    if fleet_rows:
        lines.append("across the fleet:")
        if checked:
            hosts = len({v["host"] for v in checked})
            lines.append(
                f"  PASS    inter-host collectives: {len(checked)} checks on {hosts} host(s), every element right"
            )
        for v in (v for v in fleet_rows if v not in checked):
            where = f"{v['host']}: " if v["host"] else ""
            text = (v["explanation"] or "").splitlines()[0] if v["explanation"] else ""
            lines.append(f"  {v['status']:<7} {where}{text}")
    links = [m for m in report["measurements"] if m["stage"] == "fleet-links"]
    if links:
        lines.append("inter-host links:")
        for m in links:
            trust = (m.get("conditions") or {}).get("trust") or ""
            lines.append(f"  {m['name']:<40} {m['value']:>10,.1f} {m['unit'] or ''} {trust}".rstrip())
    return "\n".join(lines)


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
