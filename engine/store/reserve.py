"""Room kept on the store's disk for a run's last writes: when the disk fills up, freeing it lets the run
store the figure that failed, why it stopped, and its end, rather than be found INTERRUPTED later.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path

RESERVE_BYTES = 1 << 20  # an end and a few held events take tens of KiB of write-ahead log; this is ample
SMALLEST_BYTES = 16 << 10  # what an end needs at least: a few pages of write-ahead log
RESERVE_NAME = ".space-reserve"
END_RESERVE_NAME = ".space-reserve-end"  # kept apart for the run's end alone, given back just before it is written


class SpaceReserve:
    """A file of RESERVE_BYTES in the run's log folder (beside the store, on its disk), given back on a full disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.held = False

    @classmethod
    def make(cls, folder: Path, name: str = "") -> SpaceReserve:
        """Hold the room now: RESERVE_BYTES, or on a nearly full disk as much of it as the disk has (half its
        free room, in steps down to SMALLEST_BYTES), so a run begun with little room still stores its end;
        on a disk with less, no reserve (and no partial file) is left."""
        reserve = cls(folder / (name or RESERVE_NAME))
        try:
            free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
        except OSError:
            free = RESERVE_BYTES
        size = RESERVE_BYTES
        while size > free // 2 and size > SMALLEST_BYTES:
            size //= 2
        try:
            fd = os.open(reserve.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError:
            return reserve
        try:
            _allocate(fd, size)
            reserve.held = True
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(reserve.path)
        finally:
            os.close(fd)
        return reserve

    def release(self) -> bool:
        """Give the room back to the disk; True when there was some to give."""
        if not self.held:
            return False
        self.held = False
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        return True


def _allocate(fd: int, size: int) -> None:
    """Blocks the file system must really give (not a sparse file), by fallocate where it is supported."""
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except OSError as error:
        if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    chunk = b"\0" * min(size, 65536)
    for _ in range(size // len(chunk)):
        os.write(fd, chunk)
    os.fsync(fd)
