"""`rigcheck serve`: the app in a browser through textual-serve, bound to 127.0.0.1 unless asked otherwise.

textual-serve runs `command` through the shell (`asyncio.create_subprocess_shell`) once per browser
websocket, with TEXTUAL_DRIVER set to Textual's web driver, and ends that process when the tab closes.
So each tab is a normal `rigcheck app` process, and whatever the app learns (attaching to a live run)
every tab learns too. textual-serve has no authentication: whoever reaches the port can start and stop runs.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from rigcheck.engine.run.preflight import UsageError, inspect_python, open_store
from rigcheck.engine.stage import PROFILES, parse_device
from rigcheck.tui.loopback import is_loopback

DEFAULT_PORT = 8000
OPEN_FLAG = "--i-know-anyone-can-connect"
INSTALL_HINT = "rigcheck serve needs textual-serve, which this environment lacks: pip install textual-serve"


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add `serve` to the subcommands; the app's own options pass through to every tab's app."""
    serve = commands.add_parser("serve", help="serve the app to a browser (on 127.0.0.1)", parents=[common])
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)")
    serve.add_argument(
        OPEN_FLAG,
        dest="open_host",
        action="store_true",
        help="allow a --host other than loopback: anyone who reaches it can start and stop runs",
    )
    serve.add_argument("--device", help="the app's device: cpu, cuda:N, a list like cuda:0,cuda:3, or all")
    serve.add_argument("--profile", default="standard", help="the app's profile")
    serve.add_argument("--python", help="run the stages under this interpreter (it needs torch)")
    serve.add_argument("--ascii", action="store_true", help="plain ASCII bars")


def app_command(args: argparse.Namespace, python: str = sys.executable) -> str:
    """The shell command each browser tab runs: this interpreter's `rigcheck app` with the options given."""
    words = [python, "-m", "rigcheck.tui.cli", "app", "--profile", args.profile]
    store = getattr(args, "store", None)
    if store:
        words += ["--store", str(Path(store).expanduser().resolve())]
    if args.device:
        words += ["--device", args.device]
    if args.python:
        words += ["--python", args.python]
    if args.ascii:
        words.append("--ascii")
    return "exec " + shlex.join(words)  # exec: the shell textual-serve starts becomes the app, not its parent


def check(args: argparse.Namespace) -> None:
    """Refuse, before listening, what would make every tab fail: a bad port, host, profile, device or store."""
    if not 0 < args.port < 65536:
        raise UsageError(f"bad --port {args.port}: use 1-65535")
    if not is_loopback(args.host) and not args.open_host:
        raise UsageError(
            f"--host {args.host} is not loopback and serve has no authentication; "
            f"add {OPEN_FLAG} to allow it, or keep 127.0.0.1 and use ssh -L {args.port}:localhost:{args.port} HOST"
        )
    if args.profile not in PROFILES:
        raise UsageError(f"bad profile {args.profile!r}: use one of {', '.join(PROFILES)}")
    if args.device:
        try:
            parse_device(args.device)
        except ValueError as error:
            raise UsageError(str(error)) from None
    open_store(getattr(args, "store", None)).close()
    if args.python:
        inspect_python(args.python)


def command_serve(args: argparse.Namespace) -> int:
    check(args)
    try:
        from rigcheck.tui.serve_server import RigcheckServer
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    if not is_loopback(args.host):
        print(
            f"rigcheck: warning: serving on {args.host}:{args.port} without authentication: "
            "anyone who can reach this address can start and stop runs",
            file=sys.stderr,
        )
    server = RigcheckServer(app_command(args), host=args.host, port=args.port, title="rigcheck")
    try:
        server.serve()
    except OSError as error:  # the port is taken, or the address is not this machine's
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {error.strerror or error}") from None
    return 0
