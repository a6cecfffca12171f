"""The control channel of a live run: a Unix socket that only the store's owner can reach and use.

The socket lives in a folder only this user can have made (engine/run/runtime.py: the sane
`$XDG_RUNTIME_DIR/rigcheck`, else a fresh private folder) whose path the engine records with the run,
is itself mode 0600, and the engine also checks each caller's uid with SO_PEERCRED. A client refuses
a socket or folder that someone else owns or that others can open.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import struct
import threading
import time
from collections.abc import Callable
from pathlib import Path

from rigcheck.engine.run.runtime import FolderRefused, default_dir, new_socket_dir

OPS = ("cancel", "cancel_stage", "ping", "subscribe")
HELLO_MAX = 65536
TIMEOUT_S = 5.0


class ControlError(Exception):
    """The run cannot be controlled: not live, or its socket is not one to trust. The message says which."""


class NotLive(ControlError):
    pass


class NoAnswer(ControlError):
    """The request reached the engine's socket but no answer came in time: it stays queued there, and the
    engine acts on it once it runs again (a SIGSTOPped engine, say)."""


def runtime_dir(create: bool = True) -> Path:
    """The folder where a socket whose path was not recorded lives (made 0700 if missing, and `create`),
    checked to be ours and closed to others; ControlError, never a traceback, when it is not."""
    try:
        return default_dir(create)
    except FolderRefused as refused:
        raise ControlError(str(refused)) from None


def _check_private(path: Path, kind: Callable[[int], bool]) -> None:
    try:
        info = os.lstat(path)
    except OSError as error:
        raise ControlError(f"refusing {path}: {error.strerror or error}") from None
    if not kind(info.st_mode):
        raise ControlError(f"refusing {path}: it is not the kind of file a control channel is")
    if info.st_uid != os.getuid():
        raise ControlError(f"refusing {path}: it belongs to uid {info.st_uid}, not to you (uid {os.getuid()})")
    if info.st_mode & 0o077:
        raise ControlError(f"refusing {path}: mode {stat.S_IMODE(info.st_mode):o} lets others in (want owner only)")


def socket_name(store_path: Path, run_id: int) -> str:
    """One socket per run per store, named so two stores never share one."""
    digest = hashlib.sha1(str(Path(store_path).resolve()).encode()).hexdigest()[:12]
    return f"{digest}-run-{run_id}.sock"


def control_path(store_path: Path, run_id: int, create: bool = True) -> Path:
    """Where run `run_id`'s socket is when its path was not recorded (an older engine, or a test's server)."""
    return runtime_dir(create) / socket_name(store_path, run_id)


def new_control_path(store_path: Path, run_id: int) -> tuple[Path, bool]:
    """Where a new run's engine puts its socket, and whether its folder is a fresh one of its own."""
    name = socket_name(store_path, run_id)
    try:
        folder, fresh = new_socket_dir(room=len(name) + 1)
    except FolderRefused as refused:
        raise ControlError(str(refused)) from None
    return folder / name, fresh


def peer_uid(conn: socket.socket) -> int:
    _pid, uid, _gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return uid


class ControlServer:
    """Answers control requests for one run on a thread of its own; `handle` gets each accepted op."""

    def __init__(
        self,
        path: Path,
        handle: Callable[[str], None],
        owner_uid: int | None = None,
        subscribe: Callable[[socket.socket], None] | None = None,
        own_dir: bool = False,
    ) -> None:
        self.path = path
        self.own_dir = own_dir  # a fresh folder made for this socket alone: removed with it
        self.handle = handle
        self.subscribe = subscribe  # takes over a connection that asked to be streamed the run's events
        self.owner_uid = os.getuid() if owner_uid is None else owner_uid
        self.refused = 0
        self._remove_stale()
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # no moment at which the socket is open to others
        try:
            self._sock.bind(str(path))
        finally:
            os.umask(old)
        os.chmod(path, 0o600)
        self._sock.listen(8)
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="rigcheck-control", daemon=True)
        self._thread.start()

    def _remove_stale(self) -> None:
        """A socket left by a dead engine (nobody listens) is removed, never trusted; one that is listened
        on, even by an engine that does not answer now, means the run is taken."""
        if not os.path.lexists(self.path):
            return
        if not stale(self.path):
            raise ControlError(f"{self.path} is held by another engine")
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if not self._answer(conn):
                conn.close()

    def _answer(self, conn: socket.socket) -> bool:
        """Answer one request; True when the connection was handed on to stay open (a subscriber)."""
        conn.settimeout(TIMEOUT_S)
        try:
            line = conn.makefile().readline(1024)  # read first, so closing never resets a caller mid-answer
            if peer_uid(conn) != self.owner_uid:
                self.refused += 1
                conn.sendall(b'{"ok": false, "error": "refused: not the owner of this run"}\n')
                return False
            op = json.loads(line or "{}").get("op")
            if op not in OPS or (op == "subscribe" and self.subscribe is None):
                conn.sendall(json.dumps({"ok": False, "error": f"unknown request {op!r}"}).encode() + b"\n")
                return False
            if op == "subscribe":
                self.subscribe(conn)  # type: ignore[misc]  # its hello line is the answer
                return True
            self.handle(op)
            conn.sendall(b'{"ok": true}\n')
        except (OSError, ValueError):
            pass  # a caller that hung up or sent garbage gets nothing
        return False

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        self._thread.join(2)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        if self.own_dir:
            with contextlib.suppress(OSError):
                os.rmdir(self.path.parent)


def stale(path: Path) -> bool:
    """Is `path` a socket nobody listens on (its engine is gone)? Not for a stopped engine: its socket
    still takes connections."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(1.0)
    try:
        sock.connect(str(path))
    except ConnectionRefusedError:
        return True
    except OSError:
        return False  # gone already, busy, or not ours to judge: left as it is
    finally:
        sock.close()
    return False


def _connect(path: Path, op: str, timeout: float = TIMEOUT_S) -> socket.socket:
    """A connection to the run behind `path`, checked to be the owner's own, with `op` asked."""
    if not os.path.lexists(path):
        raise NotLive(f"no control socket at {path}: the run's engine is not running")
    _check_private(path.parent, stat.S_ISDIR)
    _check_private(path, stat.S_ISSOCK)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(path))
        with contextlib.suppress(BrokenPipeError):  # a refusal can come before we finish asking
            sock.sendall(json.dumps({"op": op}).encode() + b"\n")
    except (ConnectionRefusedError, FileNotFoundError):
        sock.close()
        raise NotLive(f"{path} is left by an engine that is gone") from None
    except OSError as error:
        sock.close()
        raise ControlError(f"no answer from the run's engine at {path}: {error}") from None
    return sock


def _first_line(sock: socket.socket, path: Path) -> tuple[dict[str, object], bytes]:
    """The engine's answer and whatever followed it on the wire."""
    data = b""
    started = time.monotonic()
    try:
        while b"\n" not in data and len(data) < HELLO_MAX:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        line, _, rest = data.partition(b"\n")
        answer = json.loads(line or b"{}")
    except TimeoutError:
        waited = time.monotonic() - started
        raise NoAnswer(f"the run's engine took the request but did not answer within {waited:.0f} s") from None
    except (OSError, ValueError) as error:
        raise ControlError(f"no answer from the run's engine at {path}: {error}") from None
    if not answer.get("ok"):
        raise ControlError(str(answer.get("error", "the engine did not accept the request")))
    return answer, rest


def request(path: Path, op: str, timeout: float = TIMEOUT_S) -> None:
    """Ask the run behind `path` to do `op`; ControlError says why it could not: NotLive (nobody is
    there), NoAnswer (asked, but no answer in time: the request waits for the engine to run again)."""
    with _connect(path, op, timeout) as sock:
        _first_line(sock, path)


def leave(path: Path, op: str) -> None:
    """Leave `op` at the socket of an engine that cannot answer now (it is stopped): it is acted on when
    the engine runs again. ControlError (or NotLive) when it could not even be left."""
    _connect(path, op, timeout=1.0).close()


def subscribe(path: Path) -> tuple[socket.socket, dict[str, object], bytes]:
    """Join the run's event stream: the open socket, the hello (with `seq`, the last event sent before
    this subscriber joined) and the bytes already read past it. ControlError (or NotLive) says why not."""
    sock = _connect(path, "subscribe")
    try:
        answer, rest = _first_line(sock, path)
    except ControlError:
        sock.close()
        raise
    return sock, answer, rest
