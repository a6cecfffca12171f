"""`rigcheck fleet`: checks the agent's arguments, then starts torchrun with the right rendezvous for this host's
agent (`python -m rigcheck.fleet`, whose command line is engine/fleet/main.py), hands it every argument it does
not know, and exits with the agent's own exit code (torchrun's is 1 for any failure).

torchrun runs in a session of its own, through engine/fleet/launcher.py: a stop signal (Ctrl-C, SIGTERM, SIGHUP)
reaches it once, passed on from here, never a second time from the process group (`timeout` signals the whole
group), and it ends in one line, never its SignalException traceback."""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rigcheck.engine.fleet.args import AGENT_EXIT_FILE_ENV, check_agent_args
from rigcheck.engine.fleet.seal import KEY_ENV, FleetKeyError, new_key, take_key
from rigcheck.engine.run.childpath import absolute_pythonpath
from rigcheck.engine.run.preflight import UsageError

MAX_NODES = 65536


def nnodes(text: str) -> int:
    """--nnodes: a whole number of hosts, 1 to MAX_NODES (torchrun's MIN:MAX is not taken here)."""
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_NODES:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of hosts from 1 to {MAX_NODES}")
    return int(text)


def launch_argv(args: argparse.Namespace, rest: list[str]) -> list[str]:
    """The torchrun command line `rigcheck fleet` starts on this host."""
    if not 1 <= args.nnodes <= MAX_NODES:
        raise UsageError(f"--nnodes must be from 1 to {MAX_NODES}")
    host, _, port = args.endpoint.rpartition(":")
    if not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise UsageError(
            f"--endpoint {args.endpoint!r} must be HOST:PORT with a port from 1 to 65535 (the host that serves "
            "the rendezvous)"
        )
    if not args.id or not all(ch.isascii() and (ch.isalnum() or ch in "-_.") for ch in args.id):
        raise UsageError(f"--id {args.id[:40]!r} must be letters, digits, '-', '_' or '.'")
    if len(args.id) > 128:  # torchrun makes a file name of it (File name too long)
        raise UsageError(f"--id is {len(args.id)} characters long: use 128 at most")
    argv = [
        sys.executable,
        "-P",  # never import from the caller's folder (a `torch` or `rigcheck` there would run as this user)
        "-m",
        "rigcheck.engine.fleet.launcher",  # torchrun, ending in one line when a signal stops it
        f"--nnodes={args.nnodes}",
        "--nproc-per-node=1",
        "--rdzv-backend=c10d",
        f"--rdzv-endpoint={args.endpoint}",
        f"--rdzv-id={args.id}",
    ]
    if args.rendezvous_client:
        argv.append("--rdzv-conf=is_host=0")
    return [*argv, "-m", "rigcheck.fleet", *rest]


def fleet_key(args: argparse.Namespace, env: dict[str, str]) -> str:
    """The fleet key for the agents: the user's, or a fresh one where this is the only host. Several hosts
    need one key: a key made here would differ from every other host's, so it is offered, not used."""
    key = env.get(KEY_ENV, "")
    if key:
        try:
            take_key({KEY_ENV: key})  # checked as the agent will check it
        except FleetKeyError as error:
            raise UsageError(str(error)) from None
        return key
    if args.nnodes == 1:
        return new_key()
    raise UsageError(
        f"no fleet key: every host needs the same secret in {KEY_ENV}, the only thing that keeps others off "
        f"the fleet's store; set it on all {args.nnodes} hosts (a fresh one: export {KEY_ENV}={new_key()})"
    )


def agent_env(key: str, exit_file: Path) -> dict[str, str]:
    """torchrun's environment, which it hands to the agent: the key, where to leave the exit code, and no
    import path that leads into the caller's folder."""
    env = dict(os.environ)
    env[KEY_ENV] = key
    env[AGENT_EXIT_FILE_ENV] = str(exit_file)
    env["PYTHONSAFEPATH"] = "1"  # the agent (`python -m rigcheck.fleet`) and its children too
    paths = absolute_pythonpath(env.pop("PYTHONPATH", None))  # an empty entry means the current folder
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


def die_with_parent() -> None:
    """In torchrun's process before it starts: SIGTERM when `rigcheck fleet` dies (its own session keeps it from a
    SIGKILL sent to the group), so it stops its agent as on any other stop."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG (Linux)
    except (OSError, AttributeError):
        pass


def start_torchrun(argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(argv, env=env, start_new_session=True, preexec_fn=die_with_parent)


def pass_on_stops(torchrun: subprocess.Popen[bytes]) -> None:
    """Ctrl-C, SIGTERM and SIGHUP go to torchrun, once each time they come here (Ctrl-C left ignored stays so)."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, lambda sig, _frame: torchrun.send_signal(sig))


def command_fleet(args: argparse.Namespace, rest: list[str]) -> int:
    argv = launch_argv(args, rest)
    key = fleet_key(args, dict(os.environ))
    check_agent_args(rest)  # every bad input is one line here, before torchrun starts
    folder = Path(tempfile.mkdtemp(prefix="rigcheck-fleet-"))
    exit_file = folder / "agent-exit"
    print(f"rigcheck fleet: {shlex.join(argv)}", file=sys.stderr, flush=True)
    try:
        with start_torchrun(argv, agent_env(key, exit_file)) as torchrun:
            pass_on_stops(torchrun)  # torchrun stops the agent, which says how
            while True:
                try:
                    code = torchrun.wait()
                    break
                except KeyboardInterrupt:  # a Ctrl-C before the handler was set: torchrun still gets it
                    torchrun.send_signal(signal.SIGINT)
        return agent_code(exit_file, code)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def agent_code(exit_file: Path, torchrun_code: int) -> int:
    """The agent's own exit code where it left one; torchrun's otherwise (an agent killed outright)."""
    try:
        text = exit_file.read_text().strip()
    except OSError:
        return torchrun_code if torchrun_code >= 0 else 128 - torchrun_code
    return int(text) if text.isascii() and text.isdigit() and int(text) < 256 else torchrun_code


def add_fleet_parser(commands: Any) -> None:
    fleet = commands.add_parser(
        "fleet",
        help="start this host's agent of a fleet run under torchrun (run it on every host)",
        description="Checks the agent's arguments, then starts torchrun with a c10d rendezvous; every other "
        "argument goes to the agent (stages, --profile, --device, --store, the timeouts: see "
        f"`python -m rigcheck.fleet --help`). Every host needs the same secret in {KEY_ENV}: torchrun's store "
        "listens on every interface and the key is what keeps others off it (one host alone gets a fresh one).",
    )
    fleet.add_argument(
        "--nnodes",
        type=nnodes,
        required=True,
        help=f"how many hosts, 1 to {MAX_NODES} (torchrun's --nnodes: N; MIN:MAX not supported here)",
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
