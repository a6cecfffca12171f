"""The control channel of a live run: a Unix socket that only the store's owner can reach and use.

The socket lives in a per-user folder of mode 0700 (`$XDG_RUNTIME_DIR/rigcheck`, else
`$TMPDIR/rigcheck-UID`), is itself mode 0600, and the engine also checks each caller's uid with
SO_PEERCRED. A client refuses a socket or folder that someone else owns or that others can open.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import stat
import struct
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

OPS = ("cancel", "cancel_stage", "ping", "subscribe")
HELLO_MAX = 65536
TIMEOUT_S = 5.0


class ControlError(Exception):
    """The run cannot be controlled: not live, or its socket is not one to trust. The message says which."""


class NotLive(ControlError):
    pass


def runtime_dir() -> Path:
    """The user's private folder for control sockets, made 0700 and checked to be ours and closed to others."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    folder = (
        Path(base) / "rigcheck"
        if base and Path(base).is_dir()
        else Path(tempfile.gettempdir()) / f"rigcheck-{os.getuid()}"
    )
    folder.mkdir(mode=0o700, exist_ok=True)
    _check_private(folder, stat.S_ISDIR)
    return folder


def _check_private(path: Path, kind: Callable[[int], bool]) -> None:
    info = os.lstat(path)
    if not kind(info.st_mode):
        raise ControlError(f"refusing {path}: it is not the kind of file a control channel is")
    if info.st_uid != os.getuid():
        raise ControlError(f"refusing {path}: it belongs to uid {info.st_uid}, not to you (uid {os.getuid()})")
    if info.st_mode & 0o077:
        raise ControlError(f"refusing {path}: mode {stat.S_IMODE(info.st_mode):o} lets others in (want owner only)")


def control_path(store_path: Path, run_id: int) -> Path:
    """One socket per run per store, named so two stores never share one."""
    digest = hashlib.sha1(str(Path(store_path).resolve()).encode()).hexdigest()[:12]
    return runtime_dir() / f"{digest}-run-{run_id}.sock"


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
    ) -> None:
        self.path = path
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
        """A socket left by a dead engine is removed, never trusted; a live one means the run is taken."""
        if not os.path.lexists(self.path):
            return
        try:
            request(self.path, "ping")
        except ControlError:
            pass  # nobody answers, or it is not ours to trust: remove it
        else:
            raise ControlError(f"{self.path} is answered by a live engine")
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


def _connect(path: Path, op: str) -> socket.socket:
    """A connection to the run behind `path`, checked to be the owner's own, with `op` asked."""
    if not os.path.lexists(path):
        raise NotLive(f"no control socket at {path}: the run's engine is not running")
    _check_private(path.parent, stat.S_ISDIR)
    _check_private(path, stat.S_ISSOCK)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(TIMEOUT_S)
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
    try:
        while b"\n" not in data and len(data) < HELLO_MAX:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        line, _, rest = data.partition(b"\n")
        answer = json.loads(line or b"{}")
    except (OSError, ValueError) as error:
        raise ControlError(f"no answer from the run's engine at {path}: {error}") from None
    if not answer.get("ok"):
        raise ControlError(str(answer.get("error", "the engine did not accept the request")))
    return answer, rest


def request(path: Path, op: str) -> None:
    """Ask the run behind `path` to do `op`; ControlError (or NotLive) says why it could not."""
    with _connect(path, op) as sock:
        _first_line(sock, path)


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
