"""Over a real SSH session to localhost, in tmux: start a sweep with `a`, drop the SSH session, log in
again, and the sweep is there, still running, with nothing lost."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ci_tools import skip_or_fail
from stage_infos import TESTS_DIR
from tmux_screen import screen, wait_for

SSHD = "/usr/sbin/sshd"
pytestmark = pytest.mark.needs("tmux", SSHD, "ssh")  # skipped where missing; a failure in CI (tests/ci_tools.py)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def sshd(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """A private sshd on 127.0.0.1 that lets this user in with a fresh key; skipped where it cannot start."""
    folder = tmp_path / "ssh"
    folder.mkdir(mode=0o700)
    for name in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(folder / name)], check=True)
    (folder / "authorized_keys").write_text((folder / "client.pub").read_text())
    port = free_port()
    (folder / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {folder / 'host'}\n"
        f"AuthorizedKeysFile {folder / 'authorized_keys'}\nPidFile {folder / 'sshd.pid'}\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\nPermitRootLogin prohibit-password\n"
    )
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # its privilege-separation folder
    server = subprocess.Popen([SSHD, "-D", "-e", "-f", str(folder / "sshd_config")], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 10
    while True:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                break
        if server.poll() is not None or time.monotonic() > deadline:
            server.kill()
            skip_or_fail(f"sshd could not start: {(server.communicate()[1] or '').strip()[:200]}")
        time.sleep(0.1)
    try:
        yield port, folder / "client"
    finally:
        server.terminate()
        server.wait(10)


def ssh_command(port: int, key: Path, remote: str) -> str:
    options = "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
    return f"ssh -tt {options} -i {key} -p {port} {os.environ.get('USER', 'root')}@127.0.0.1 '{remote}'"


def test_a_sweep_survives_its_ssh_session(sshd: tuple[int, Path], tmp_path: Path) -> None:
    port, key = sshd
    store = tmp_path / "s.db"
    env = (
        f"RIGCHECK_STORE={store} RIGCHECK_CONFIG={tmp_path / 'settings.json'} TMPDIR={os.environ['TMPDIR']} "
        f"TEXTUAL_ANIMATIONS=none TERM=xterm-256color"
    )
    remote = f"cd {TESTS_DIR} && {env} {sys.executable} app_driver.py --device cpu"
    first, second = f"rigcheck-ssh-{os.getpid()}", f"rigcheck-ssh2-{os.getpid()}"
    subprocess.run(["tmux", "new-session", "-d", "-s", first, "-x", "100", "-y", "30", ssh_command(port, key, remote)])
    try:
        wait_for(first, lambda text: "Stages" in text and "slow" in text, 60)
        subprocess.run(["tmux", "send-keys", "-t", first, "a"], check=True)
        wait_for(first, lambda text: any("slow" in line and "running" in line for line in text.splitlines()), 60)
        subprocess.run(["tmux", "kill-session", "-t", first], check=True)  # the SSH session drops
        time.sleep(1.0)
        with sqlite3.connect(store) as db:
            status, pid = db.execute("SELECT status, pid FROM runs WHERE id = 1").fetchone()
        assert status == "running" and os.path.exists(f"/proc/{pid}")  # the engine outlived the session

        subprocess.run(
            ["tmux", "new-session", "-d", "-s", second, "-x", "100", "-y", "30", ssh_command(port, key, remote)]
        )
        text = wait_for(second, lambda text: "attached to run 1" in text or ("run 1" in text and "slow" in text), 60)
        text = wait_for(
            second, lambda text: any("slow" in line and "running" in line for line in text.splitlines()), 30
        )
        assert any("ok" in line and "PASS" in line for line in text.splitlines()), text
        subprocess.run(["tmux", "send-keys", "-t", second, "c"], check=True)  # cancel the stage from the new login
        wait_for(second, lambda text: any("slow" in line and "cancelled" in line for line in text.splitlines()), 30)
    finally:
        for session in (first, second):
            subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
    with sqlite3.connect(store) as db:
        stages = dict(db.execute("SELECT name, status FROM stages WHERE run_id = 1"))
        figures = [name for (name,) in db.execute("SELECT name FROM measurements WHERE run_id = 1")]
    assert stages == {"ok": "PASS", "slow": "SKIP"} and figures == ["answer"], screen(second)
    deadline = time.monotonic() + 20  # the engine is not this test's child: let it finish and tidy up
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.1)
