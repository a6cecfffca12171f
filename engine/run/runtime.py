"""The private folders that control sockets and device locks live in, chosen so no other user can have made them.

A run's socket goes in `$XDG_RUNTIME_DIR/rigcheck` where that runtime folder is sane (a real folder of
ours, mode 0700), else in a fresh `tempfile.mkdtemp` folder; either way its path is recorded with the
run in the store, so a caller with another environment still finds it. A fixed name in a shared
folder (`$TMPDIR/rigcheck-UID`) is only ever used after checking it is ours and closed to others.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

PREFIX = "rigcheck-"  # a fresh socket folder is `$TMPDIR/rigcheck-XXXXXXXX`
SOCKET_PATH_MAX = 107  # AF_UNIX's sun_path, less its closing NUL


class FolderRefused(Exception):
    """A folder that is not ours alone (or cannot be made); the message names it and what is wrong."""


def private_problem(path: Path) -> str | None:
    """None when `path` is a real folder (not a link) of ours that no one else can enter, else what is wrong."""
    try:
        info = os.lstat(path)
    except OSError as error:
        return f"it cannot be looked at ({error.strerror or error})"
    if stat.S_ISLNK(info.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a folder"
    if info.st_uid != os.getuid():
        return f"it belongs to uid {info.st_uid}, not to you (uid {os.getuid()})"
    if info.st_mode & 0o077:
        return f"mode {stat.S_IMODE(info.st_mode):o} lets others in (want owner only)"
    return None


def private_dir(path: Path, create: bool = True) -> Path:
    """`path` as a private folder of ours, made 0700 if missing (and `create`); FolderRefused otherwise."""
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass  # whatever is there is checked below, never trusted
        except OSError as error:
            raise FolderRefused(f"cannot make {path}: {error.strerror or error}") from None
    problem = private_problem(path)
    if problem is not None:
        raise FolderRefused(f"refusing {path}: {problem}")
    return path


def xdg_runtime() -> Path | None:
    """`$XDG_RUNTIME_DIR` when it is set and sane: an absolute path to a real folder of ours, mode 0700."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if not base or not os.path.isabs(base) or private_problem(Path(base)) is not None:
        return None
    return Path(base)


def shared_fixed_dir() -> Path:
    """The per-user folder of a fixed name in the shared temporary folder: `$TMPDIR/rigcheck-UID`."""
    return Path(tempfile.gettempdir()) / f"{PREFIX}{os.getuid()}"


def default_dir(create: bool) -> Path:
    """Where a socket whose path was not recorded is looked for (and where tests make one): the runtime
    folder's `rigcheck`, else `$TMPDIR/rigcheck-UID`. FolderRefused when it is not ours alone."""
    xdg = xdg_runtime()
    return private_dir(xdg / "rigcheck" if xdg else shared_fixed_dir(), create)


def new_socket_dir(room: int = 0) -> tuple[Path, bool]:
    """A folder for a new run's control socket and whether it is a fresh one (to remove at the end): the
    runtime folder's `rigcheck` when that is sane, else a fresh private folder only this process made.
    `room` is what the socket's name needs: a socket's path must fit in AF_UNIX's 108 bytes, so a long
    $TMPDIR gives way to /tmp."""
    xdg = xdg_runtime()
    if xdg is not None and len(os.fsencode(xdg / "rigcheck")) + room < SOCKET_PATH_MAX:
        try:
            return private_dir(xdg / "rigcheck"), False
        except FolderRefused:
            pass  # something else is at that name: a fresh folder serves as well, its path is recorded
    base = tempfile.gettempdir()
    if len(os.fsencode(base)) + len(PREFIX) + 10 + room >= SOCKET_PATH_MAX:
        base = "/tmp"
    try:
        return Path(tempfile.mkdtemp(prefix=PREFIX, dir=base)), True
    except OSError as error:
        raise FolderRefused(f"cannot make a private folder in {base}: {error.strerror or error}") from None


# Root's last place for device locks: only root can make a name in /run, so no neighbour can pre-empt it.
ROOT_LOCKS = Path("/run/rigcheck-locks")


def lock_fallbacks() -> list[Path]:
    """Where device locks go when `$TMPDIR/rigcheck-UID` was taken: the runtime folder's `rigcheck`, and for
    root a folder in /run."""
    places = []
    xdg = xdg_runtime()
    if xdg is not None:
        places.append(xdg / "rigcheck")
    if os.getuid() == 0:
        places.append(ROOT_LOCKS)
    return places


def lock_dir() -> Path:
    """The per-user folder that device locks live in, the same whatever XDG_RUNTIME_DIR a shell has:
    `$TMPDIR/rigcheck-UID`, else (when another user took that name) a fallback no one else can take.
    FolderRefused, naming the taken folder, when there is none: the caller refuses the run (or, with
    --force, goes on marked as sharing)."""
    try:
        return private_dir(shared_fixed_dir())
    except FolderRefused as refused:
        for place in lock_fallbacks():
            try:
                return private_dir(place)
            except FolderRefused:
                continue
        raise refused from None
