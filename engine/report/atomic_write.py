"""Replace a file in one step, so a reader (node_exporter's textfile collector, a CI job) never sees it half written.

Only a regular file of this user's, or no file yet, is replaced: rigcheck runs as root on shared machines, and a
rename over /dev/full, a FIFO, a socket or a symlink (/dev/stdout, /proc/self/fd/1) would replace the device or
link itself, and one over another user's file would take it from them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from rigcheck.engine.store.folders import FolderRefused, check_folders

KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFDIR: "a folder",
    stat.S_IFCHR: "a device",
    stat.S_IFBLK: "a device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
}


class RefusedTarget(OSError):
    """The path holds something rigcheck will not replace; the message says what, in a few words."""


def temp_name(path: Path) -> Path:
    """Beside the target (a rename across file systems is not atomic), hidden, and not ending in .prom, so
    the textfile collector, which reads only *.prom, never picks it up."""
    return path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def owned_by_someone_else(info: os.stat_result) -> bool:
    return info.st_uid != os.geteuid()


def existing_target(path: Path) -> os.stat_result | None:
    """What is at `path` now (not following a link), or None when nothing is; RefusedTarget when it is
    anything but a regular file of this user's, or when a folder on the way may be changed by another user."""
    try:
        check_folders(path.parent)
    except FolderRefused as refused:
        raise RefusedTarget(str(refused)) from None
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    kind = stat.S_IFMT(info.st_mode)
    if kind != stat.S_IFREG:
        raise RefusedTarget(f"is {KINDS.get(kind, 'not a regular file')}; rigcheck writes only regular files")
    if owned_by_someone_else(info):
        raise RefusedTarget(f"belongs to another user (uid {info.st_uid}); rigcheck replaces only its user's files")
    return info


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a new temporary file in `path`'s folder, then rename it over `path`.

    A failure, or a target that is not a regular file of this user's (RefusedTarget), leaves `path` as it
    was and no temporary file. A new file gets the mode open() would give it (0666 less the umask:
    node_exporter usually runs as another user); a replaced file keeps its mode."""
    existing_target(path)
    temp = temp_name(path)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            current = existing_target(path)  # again: it may have changed while we wrote
            if current is not None:
                os.fchmod(out.fileno(), stat.S_IMODE(current.st_mode))
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
