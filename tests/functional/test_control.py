"""The control channel accepts only its owner: a wrong-mode or foreign socket, or another user, is refused."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest
from rigcheck.engine.run.control import ControlError, ControlServer, NotLive, control_path, request, runtime_dir


@pytest.fixture
def private_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "run"
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


@pytest.mark.skipif(os.getuid() != 0, reason="switching to another user needs root")
@pytest.mark.skipif(not os.access(SYSTEM_PYTHON, os.X_OK), reason="no system python for the other user to run")
def test_another_real_user_cannot_reach_the_socket(private_runtime: Path) -> None:
    asked: list[str] = []
    path = control_path(private_runtime / "s.db", 1)
    os.chmod(private_runtime, 0o755)  # even with the runtime folder open, the socket's folder and mode keep them out
    server = ControlServer(path, asked.append)
    code = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect({str(path)!r}); s.sendall(b'cancel')"
    try:
        done = subprocess.run(
            [SYSTEM_PYTHON, "-c", code], user=65534, capture_output=True, text=True, timeout=30, cwd="/"
        )
    finally:
        server.close()
    assert done.returncode != 0 and "PermissionError" in done.stderr
    assert asked == []


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
