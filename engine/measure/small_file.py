"""A small file read from a path rigcheck did not choose (a baseline the user names, the installed reference
table): a regular file of bounded size, opened without blocking, so a FIFO with no writer is refused at once and a
device is never read until memory runs out. Standard library only: stage children read the table too."""

from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_READ = 16 * 1024 * 1024  # a baseline or any small file rigcheck reads from the user


def read_small(path: Path, limit: int = MAX_READ) -> bytes:
    """A regular file's bytes, at most `limit`; OSError (with strerror) for a FIFO, a device, a folder or a
    file too large. Opened non-blocking, so a FIFO with no writer is refused at once, not waited on."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            folder = stat.S_ISDIR(info.st_mode)
            kind = "a folder, not a regular file" if folder else "not a regular file (a FIFO, device or socket)"
            raise OSError(0, f"it is {kind}")
        if info.st_size > limit:
            raise OSError(0, f"it is {info.st_size:,} bytes, over the {limit:,} read")
        data = b""
        while len(data) <= limit:
            chunk = os.read(fd, limit + 1 - len(data))
            if not chunk:
                return data
            data += chunk
        raise OSError(0, f"it grew over the {limit:,} bytes read")
    finally:
        os.close(fd)
