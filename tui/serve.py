"""`rigcheck serve`: the app in a browser through textual-serve, on 127.0.0.1 unless asked otherwise, behind a token.

textual-serve starts one app process per browser websocket, with TEXTUAL_DRIVER set to Textual's web
driver; here it is started without a shell, isolated from the working directory, and always ended with its
tab (serve_tabs.py). So each tab is a normal `rigcheck app` process, and whatever the app learns (attaching
to a live run) every tab learns too. The port is bound first, on both loopback families (serve_bind.py), so
a port taken is said at once, before the slower checks of the store and the interpreter.
textual-serve has no authentication of its own: serve_server.py asks every request
for the token (serve_token.py) printed here, in the page's address.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import socket
import sys
from pathlib import Path
from typing import Any

from rigcheck.engine.exits import EXIT_INTERRUPTED, EXIT_PORT_TAKEN
from rigcheck.engine.hw.gpu_nodes import surely_no_gpu
from rigcheck.engine.run.given import nonempty
from rigcheck.engine.run.numbers import bounded_int
from rigcheck.engine.run.preflight import UsageError, inspect_python, no_gpu_device, open_store, run_devices
from rigcheck.engine.stage import PROFILES, parse_device
from rigcheck.tui.loopback import is_loopback
from rigcheck.tui.serve_argv import app_argv
from rigcheck.tui.serve_bind import listen
from rigcheck.tui.serve_runs import tab_runs
from rigcheck.tui.serve_token import server_token

DEFAULT_PORT = 8000
OPEN_FLAG = "--i-know-anyone-can-connect"
INSTALL_HINT = "rigcheck serve needs textual-serve, which this environment lacks: pip install textual-serve"


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    """Add `serve` to the subcommands; the app's own options pass through to every tab's app."""
    serve = commands.add_parser("serve", help="serve the app to a browser (on 127.0.0.1)", parents=[common])
    serve.add_argument(
        "--port", type=bounded_int(1, 65535), default=DEFAULT_PORT, help=f"port to listen on (default {DEFAULT_PORT})"
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1, this machine only)")
    serve.add_argument(
        OPEN_FLAG,
        dest="open_host",
        action="store_true",
        help="allow a --host other than loopback (plain HTTP: the token crosses the network unencrypted)",
    )
    serve.add_argument(
        "--device", type=nonempty, help="the app's device: cpu, cuda:N, a list like cuda:0,cuda:3, or all"
    )
    serve.add_argument("--profile", default="standard", help="the app's profile")
    serve.add_argument("--python", type=nonempty, help="run the stages under this interpreter (it needs torch)")
    serve.add_argument("--ascii", action="store_true", help="plain ASCII bars")


def app_args(args: argparse.Namespace) -> list[str]:
    """The options each browser tab's `rigcheck app` is given: serve's own, the store as an absolute path."""
    words = ["--profile", args.profile]
    store = getattr(args, "store", None)
    if store:
        words += ["--store", str(Path(store).expanduser().resolve())]
    if args.device:
        words += ["--device", args.device]
    if args.python:
        words += ["--python", args.python]
    if args.ascii:
        words.append("--ascii")
    return words


def check_words(args: argparse.Namespace) -> None:
    """Refuse at once what is wrong on its face: a bad port, host, profile or device."""
    if not 0 < args.port < 65536:
        raise UsageError(f"bad --port {args.port}: use 1-65535")
    if not is_loopback(args.host) and not args.open_host:
        raise UsageError(
            f"--host {args.host} is not loopback and serve speaks plain HTTP, so its token would cross the network "
            f"unencrypted; add {OPEN_FLAG} to allow it, "
            f"or keep 127.0.0.1 and use ssh -L {args.port}:127.0.0.1:{args.port} HOST"
        )
    if args.profile not in PROFILES:
        raise UsageError(f"bad profile {args.profile!r}: use one of {', '.join(PROFILES)}")
    try:
        if args.device:
            parse_device(args.device)
    except ValueError as error:
        raise UsageError(str(error)) from None


def check_setup(args: argparse.Namespace) -> None:
    """Refuse, before serving, what would make every tab fail: a store or interpreter that cannot serve."""
    device = parse_device(args.device) if args.device else None
    open_store(getattr(args, "store", None)).close()
    if not args.python and device != "cpu" and surely_no_gpu():
        device = no_gpu_device(device)  # as `run` and `app` say it: no torch could see a GPU on this host
    if args.python or device != "cpu":  # as `app` checks it: a GPU its interpreter's torch cannot see is refused
        run_devices(device, inspect_python(args.python or sys.executable))


def warnings(args: argparse.Namespace, euid: int) -> list[str]:
    """What serve says on stderr once it listens: root's tabs run as root; a network address is plain HTTP."""
    said = []
    if euid == 0:
        said.append(
            "rigcheck: warning: serve runs as root: every browser tab runs rigcheck as root, "
            "so whoever has the token can start runs as root"
        )
    if not is_loopback(args.host):
        said.append(
            f"rigcheck: warning: serving on {args.host}:{args.port} over plain HTTP: the token crosses the network "
            "unencrypted, and anyone who sees it can start and stop runs"
        )
    return said


def page_address(host: str, port: int, token: str) -> str:
    """The address to open: a wildcard bind is shown as this machine's name, an IPv6 address in brackets."""
    shown = socket.gethostname() if host in ("0.0.0.0", "::", "") else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/?token={token}"


def cannot_listen(args: argparse.Namespace, error: OSError) -> int:
    """A port taken is one line and its own exit code; any other bind failure is a usage error."""
    where = f"cannot listen on {error.filename or f'{args.host}:{args.port}'}"
    if error.errno == errno.EADDRINUSE:
        print(f"rigcheck: {where}: another program listens there; pick another --port", file=sys.stderr)
        return EXIT_PORT_TAKEN
    raise UsageError(f"{where}: {error.strerror or error}") from None


def command_serve(args: argparse.Namespace) -> int:
    check_words(args)
    token = server_token()
    try:  # before anything slow: a port taken is said at once
        sockets = listen(args.host, args.port)
    except OSError as error:
        return cannot_listen(args, error)
    try:
        check_setup(args)
        try:
            from rigcheck.tui.serve_server import RigcheckServer
        except ImportError:
            raise UsageError(INSTALL_HINT) from None
        serve_with(RigcheckServer, args, sockets, token)
    finally:
        for listener in sockets:
            with contextlib.suppress(OSError):
                listener.close()
    return EXIT_INTERRUPTED  # serving returns only once SIGINT or SIGTERM has stopped it


def serve_with(server_class: Any, args: argparse.Namespace, sockets: list[socket.socket], token: str) -> None:
    """Serve on `sockets` until stopped, saying where once it listens."""

    def on_listening() -> None:
        for line in warnings(args, os.geteuid()):
            print(line, file=sys.stderr, flush=True)
        print("serving the rigcheck app; open this address (the token in it is this server's), Ctrl-C stops it:")
        print(f"    {page_address(args.host, args.port, token)}", flush=True)

    argv = app_argv(app_args(args))
    server = server_class(argv, sockets, host=args.host, title="rigcheck", token=token, on_listening=on_listening)
    with tab_runs(lambda: open_store(args.store)):  # the runs the tabs start stop with serve
        server.serve()
