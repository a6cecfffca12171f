"""The fleet agent's command line (`python -m rigcheck.fleet`): torchrun starts it on every host; rank 0 prints
the fleet's summary on stdout. Plain argparse and print: the agent runs headless, without the front ends."""

from __future__ import annotations

import os
import signal
import sys
from contextlib import suppress

from rigcheck.engine.exits import EXIT_INTERRUPTED, EXIT_NO_STORE, EXIT_USAGE
from rigcheck.engine.fleet.agent import Agent, FleetStoreError, refuse_early
from rigcheck.engine.fleet.args import AGENT_EXIT_FILE_ENV, FleetOptions, agent_parser, check_agent_args, fleet_options
from rigcheck.engine.fleet.channel import StoreTampered
from rigcheck.engine.fleet.env import FleetEnv, FleetEnvError, read_env
from rigcheck.engine.fleet.seal import FleetKeyError, take_key
from rigcheck.engine.report.fleet_summary import fleet_summary
from rigcheck.engine.run.options import write_reports
from rigcheck.engine.run.owner import DeviceBusy, StopSignal
from rigcheck.engine.run.preflight import UsageError

REFUSAL_WAIT_S = 60.0  # for rank 0's store, to say why this agent refused (rank 0 may still be starting)
__all__ = ["FleetOptions", "agent_main", "agent_parser", "check_agent_args", "fleet_options"]


LAUNCHER_STOP = (
    "stopped by SIGTERM from the launcher (torchrun stops its workers once one of them has ended in failure, "
    "or when it is stopped itself)"
)


def stop_on_sigterm(signum: int, frame: object) -> None:
    """torchrun stops its workers with SIGTERM: the run stops as on Ctrl-C, and its stages say who stopped it."""
    raise StopSignal(LAUNCHER_STOP)


def agent_main(argv: list[str] | None = None) -> int:
    """The agent's exit code, also written where `rigcheck fleet` reads it (torchrun itself exits 1 for any
    failure of its worker)."""
    exit_file = os.environ.pop(AGENT_EXIT_FILE_ENV, "")
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
