"""The control channel accepts only its owner: a wrong-mode or foreign socket, or another user, is refused."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from ci_tools import need
from rigcheck.engine.run.control import ControlError, ControlServer, NotLive, control_path, request, runtime_dir


@pytest.fixture
def private_runtime(short_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = short_dir / "run"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(folder))
    return folder


def test_the_owner_is_answered(private_runtime: Path) -> None:
    asked: list[str] = []
    path = control_path(private_runtime / "s.db", 1)
    server = ControlServer(path, asked.append)
    try:
        assert path.parent == runtime_dir() and path.parent.stat().st_mode & 0o777 == 0o700
        assert path.stat().st_mode & 0o777 == 0o600
        request(path, "cancel_stage")
        request(path, "cancel")
        with pytest.raises(ControlError, match="unknown request 'reboot'"):
            request(path, "reboot")
    finally:
        server.close()
    assert asked == ["cancel_stage", "cancel"]
    assert not path.exists()


def test_a_caller_of_another_uid_is_refused(private_runtime: Path) -> None:
    asked: list[str] = []
    path = control_path(private_runtime / "s.db", 1)
    server = ControlServer(path, asked.append, owner_uid=os.getuid() + 1)  # as if the run were someone else's
    try:
        with pytest.raises(ControlError, match="refused: not the owner"):
            request(path, "cancel")
    finally:
        server.close()
    assert asked == [] and server.refused == 1


SYSTEM_PYTHON = "/usr/bin/python3"
CONNECT_AS_OTHER = """
import socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except PermissionError:
    print("refused by the file system")
    sys.exit(0)
s.sendall(b'{"op": "cancel"}\\n')
print("connected; the engine answered:", s.makefile().readline().strip())
sys.exit(1)
"""


@pytest.fixture
def other_user() -> Iterator[int]:
    """A second real user, made for this test and removed after it: the uid."""
    if os.getuid() != 0:
        pytest.skip("making a second real user and switching to it needs root (CI runs as root)")
    need("useradd", SYSTEM_PYTHON)  # the second user's client is the system python: the venv may be private
    name = f"rcother{os.getpid() % 100000}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True, timeout=60)
    try:
        yield pwd.getpwnam(name).pw_uid
    finally:
        subprocess.run(["userdel", name], check=False, timeout=60)


@pytest.fixture
def open_folders(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder every user may pass through (outside pytest's own 0700 tmp_path), holding the store, the
    runtime folder and TMPDIR: whatever keeps another user out of the run's socket is then rigcheck's own doing."""
    base = Path(tempfile.mkdtemp(prefix="rigcheck-other-user-", dir="/tmp"))
    for name in ("", "xdg", "tmp", "store"):
        (base / name).mkdir(exist_ok=True)
        os.chmod(base / name, 0o755)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(base / "xdg"))
    monkeypatch.setenv("TMPDIR", str(base / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)
    try:
        yield base
    finally:
        monkeypatch.undo()
        tempfile.tempdir = None
        shutil.rmtree(base, ignore_errors=True)


def test_another_real_user_cannot_reach_a_live_runs_socket(other_user: int, open_folders: Path) -> None:
    """A run started by this user (root in CI); a second real user tries its control socket and is kept out by
    the socket's folder and mode. With both opened up (0777) the same user gets through, and this test fails."""
    from rigcheck.engine.run.detach import spawn
    from rigcheck.engine.run.request import RunRequest
    from rigcheck.engine.run.sockets import socket_of
    from rigcheck.engine.store import Store
    from stage_infos import fake

    store_path = open_folders / "store" / "s.db"
    run_id, engine = spawn(
        store_path, RunRequest((fake("ok"), fake("slow", timeout=120)), "cpu", "quick", telemetry=False)
    )
    deadline = time.monotonic() + 60
    while not (sockets := [p for p in open_folders.rglob("*") if p.is_socket()]):
        assert time.monotonic() < deadline, f"the run's engine never made its control socket under {open_folders}"
        time.sleep(0.05)
    [path] = sockets
    try:
        above = [p for p in path.parent.parents if not p.stat().st_mode & 0o001]
        assert not above, f"{above} keep other users out already: the test could not tell rigcheck's protection"
        tried = subprocess.run(
            [SYSTEM_PYTHON, "-c", CONNECT_AS_OTHER, str(path)],
            user=other_user,
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
        )
        assert (tried.returncode, tried.stdout.strip()) == (0, "refused by the file system"), tried.stderr
        assert Store(store_path).run(run_id)["status"] == "running"  # the other user stopped nothing
        assert path == socket_of(Store(store_path), run_id)  # the socket every client of this run uses
        request(path, "cancel")  # and its owner still can
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            os.kill(engine, signal.SIGTERM)  # a failed check leaves no run behind
        raise
    while Store(store_path).run(run_id)["status"] == "running":
        assert time.monotonic() < deadline + 60, "the run did not end after its owner cancelled it"
        time.sleep(0.1)
    assert Store(store_path).run(run_id)["status"] == "cancelled"


def test_a_wrong_mode_socket_is_refused(private_runtime: Path) -> None:
    asked: list[str] = []
    path = control_path(private_runtime / "s.db", 1)
    server = ControlServer(path, asked.append)
    try:
        os.chmod(path, 0o666)
        with pytest.raises(ControlError, match="mode 666 lets others in"):
            request(path, "cancel")
    finally:
        server.close()
    assert asked == []


def test_an_open_runtime_folder_is_refused(private_runtime: Path) -> None:
    (private_runtime / "rigcheck").mkdir(mode=0o777)
    os.chmod(private_runtime / "rigcheck", 0o777)
    with pytest.raises(ControlError, match="lets others in"):
        runtime_dir()


def test_a_stale_socket_is_cleaned_up_never_trusted(private_runtime: Path) -> None:
    path = control_path(private_runtime / "s.db", 1)
    dead = socket.socket(socket.AF_UNIX)
    dead.bind(str(path))
    os.chmod(path, 0o600)
    dead.close()  # the engine died: the file stays, nobody answers
    with pytest.raises(NotLive, match="left by an engine that is gone"):
        request(path, "cancel")
    asked: list[str] = []
    server = ControlServer(path, asked.append)
    try:
        request(path, "cancel")
    finally:
        server.close()
    assert asked == ["cancel"]


def test_a_live_socket_is_not_taken_over(private_runtime: Path) -> None:
    path = control_path(private_runtime / "s.db", 1)
    server = ControlServer(path, lambda op: None)
    try:
        with pytest.raises(ControlError, match="held by another engine"):
            ControlServer(path, lambda op: None)
    finally:
        server.close()
