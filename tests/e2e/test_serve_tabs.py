"""serve's tabs: a tab closed at once leaves no app behind, each app starts isolated from the working directory,
the token reaches no log, and the port is held on both loopback families."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from other_user import second_user
from rigcheck.engine.exits import EXIT_PORT_TAKEN
from test_serve import (
    RIGCHECK,
    WEBSOCKET,
    Served,
    serve_env,
    start,
    stop,
    wait_listening,
)


def apps_of(tmp_path: Path) -> list[psutil.Process]:
    """Every live app process of this test's serve, wherever it was reparented: found by its store in its
    environment, which only this test's serve passed on."""
    marker = f"RIGCHECK_STORE={tmp_path / 's.db'}".encode()
    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            if process.pid == os.getpid() or process.status() == psutil.STATUS_ZOMBIE:
                continue
            if marker in Path(f"/proc/{process.pid}/environ").read_bytes().split(b"\0") and "serve" not in (
                process.cmdline()
            ):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, OSError):
            continue
    return found


def knock(served: Served, hold: float) -> None:
    """What a headless screenshot does: open the tab's websocket, and close it within a second."""
    tab = socket.create_connection(("127.0.0.1", served.port), timeout=30)
    try:
        headers = {**WEBSOCKET, "Host": f"127.0.0.1:{served.port}"}
        request = f"GET /{served.token}/ws?width=80&height=24 HTTP/1.1\r\n"
        tab.sendall((request + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode())
        assert tab.recv(4096).startswith(b"HTTP/1.1 101"), "the websocket was refused"
        time.sleep(hold)
    finally:
        tab.close()


def kill_all(processes: list[psutil.Process]) -> None:
    for process in processes:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()


def test_tabs_closed_at_once_leave_no_app_and_ctrl_c_still_ends_everything(tmp_path: Path) -> None:
    served = start(tmp_path)
    try:
        wait_listening(served)
        for turn in range(10):
            knock(served, hold=0.1 * turn)  # closed from at once to within a second
        deadline = time.monotonic() + 60
        while apps_of(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.2)
        left = apps_of(tmp_path)
        kill_all(left)
        assert left == [], f"{len(left)} app processes outlived their closed tabs: {left}"
        knock(served, hold=0.2)  # one more, still starting when serve is stopped
        began = time.monotonic()
        assert stop(served) == 130
        gone = time.monotonic() - began
    finally:
        if served.process.poll() is None:
            served.process.kill()
        stray = apps_of(tmp_path)
        kill_all(stray)
    assert stray == [], f"{len(stray)} app processes outlived serve"
    assert gone < 15, f"serve took {gone:.1f} s to stop"


def send_raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(data)
        return connection.recv(4096)


def test_the_token_reaches_no_log_from_a_plain_get_or_an_unparsable_request(tmp_path: Path) -> None:
    served = start(tmp_path)
    try:
        wait_listening(served)
        token, host = served.token, f"Host: 127.0.0.1:{served.port}\r\n"
        # what a proxy that drops `Upgrade` sends: once a traceback with the path among its locals
        plain = send_raw(served.port, f"GET /{token}/ws HTTP/1.1\r\n{host}\r\n".encode())
        assert plain.startswith(b"HTTP/1.1 400"), plain
        unparsable = [
            f"GET /?token={token} HTTP/1.1\r\n{host}Bad Header: x\r\n\r\n",
            f"GET /?token={token} HTTP/9.9\r\n\r\n",
            f"GET /?token={token}\x00 HTTP/1.1\r\n\r\n",
            f"GET /{token}/ws HTTP/1.1\r\n{host}Content-Length: zz\r\n\r\n",
            f"GET /?token={token}&pad={'a' * 9000} HTTP/1.1\r\n{host}\r\n",
        ]
        for request in unparsable:
            assert send_raw(served.port, request.encode()).startswith(b"HTTP/1.0 400"), request[:40]
        assert stop(served) == 130
    finally:
        if served.process.poll() is None:
            served.process.kill()
    log = served.log.read_text()
    assert log.count("Error handling request") >= len(unparsable) - 1, log  # each was logged
    assert log.count(token) == 1, f"the token is in serve's log beyond its address:\n{log}"
    pieces = {token[at : at + 8] for at in range(len(token) - 8)}
    assert sum(log.count(piece) for piece in pieces) == len(pieces), "a piece of the token is in the log"


PLANTED = "import pathlib; pathlib.Path({mark!r}).write_text('planted code ran')\n"


def test_a_tab_never_imports_the_working_directory(tmp_path: Path) -> None:
    """A `rigcheck/` planted in the folder serve runs in is never what a tab's app runs."""
    folder, mark = tmp_path / "shared", tmp_path / "planted-ran"
    for part in ("rigcheck", "rigcheck/tui"):
        (folder / part).mkdir(parents=True)
        (folder / part / "__init__.py").write_text(PLANTED.format(mark=str(mark)))
    (folder / "rigcheck/tui/cli.py").write_text(PLANTED.format(mark=str(mark)))
    served = start(tmp_path, cwd=folder)
    try:
        wait_listening(served)
        tab = socket.create_connection(("127.0.0.1", served.port), timeout=30)
        headers = {**WEBSOCKET, "Host": f"127.0.0.1:{served.port}"}
        request = f"GET /{served.token}/ws?width=80&height=24 HTTP/1.1\r\n"
        tab.sendall((request + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode())
        received, deadline = b"", time.monotonic() + 90
        while len(received) < 4000 and not mark.exists():  # the real app's first draw, or the plant's mark
            assert time.monotonic() < deadline, f"the tab's app never drew:\n{served.log.read_text()}"
            received += tab.recv(65536)
        tab.close()
        assert not mark.exists(), "a tab ran the code planted in serve's working directory"
        assert b"Stages" in received or len(received) >= 4000
    finally:
        stop(served)
        kill_all(apps_of(tmp_path))


SQUAT = """
import socket, sys, time
s = socket.socket(socket.AF_INET6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
s.bind(("::1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
time.sleep(300)
"""


@contextlib.contextmanager
def squatter_on_ipv6_loopback() -> Iterator[int]:
    """What another real user can do to a serve bound to 127.0.0.1 alone: listen on [::1] at that port."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        pytest.skip("this host has no IPv6 loopback, so nobody can take [::1]")
    with second_user() as mallory:
        squatter = subprocess.Popen(
            ["/usr/bin/python3", "-c", SQUAT], user=mallory, cwd="/", stdout=subprocess.PIPE, text=True
        )
        try:
            assert squatter.stdout is not None
            yield int(squatter.stdout.readline())
        finally:
            squatter.kill()
            squatter.wait()


def test_a_port_taken_on_either_loopback_family_is_refused_before_the_slow_checks(tmp_path: Path) -> None:
    with squatter_on_ipv6_loopback() as port:
        refused_at(port, tmp_path)


def refused_at(port: int, tmp_path: Path) -> None:
    slow = tmp_path / "slow-python"  # an interpreter that takes a minute to answer: the port is said first
    slow.write_text("#!/bin/sh\nsleep 60\n")
    slow.chmod(0o755)
    began = time.monotonic()
    done = subprocess.run(
        [RIGCHECK, "serve", "--device", "cpu", "--port", str(port), "--python", str(slow)],
        capture_output=True,
        text=True,
        env=serve_env(tmp_path),
        timeout=120,
    )
    took = time.monotonic() - began
    assert done.returncode == EXIT_PORT_TAKEN, done
    assert done.stderr.splitlines() == [done.stderr.strip()] and f"[::1]:{port}" in done.stderr, done.stderr
    assert took < 30, f"the taken port was said after {took:.1f} s"


def test_an_app_dies_with_serve_even_on_kill_9(tmp_path: Path) -> None:
    """serve killed outright cannot end its tabs: each app asked the kernel to end it with its parent."""
    served = start(tmp_path)
    try:
        wait_listening(served)
        tab = socket.create_connection(("127.0.0.1", served.port), timeout=30)
        headers = {**WEBSOCKET, "Host": f"127.0.0.1:{served.port}"}
        request = f"GET /{served.token}/ws?width=80&height=24 HTTP/1.1\r\n"
        tab.sendall((request + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode())
        deadline = time.monotonic() + 60
        while not apps_of(tmp_path):
            assert time.monotonic() < deadline, "the tab's app never started"
            time.sleep(0.1)
        served.process.kill()
        served.process.wait(30)
        deadline = time.monotonic() + 30
        while apps_of(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = apps_of(tmp_path)
        tab.close()
    finally:
        if served.process.poll() is None:
            served.process.kill()
        kill_all(apps_of(tmp_path))
    assert left == [], f"{len(left)} app processes outlived a serve killed with -9"
