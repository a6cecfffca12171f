"""Replace a file in one step, so a reader (node_exporter's textfile collector, a CI job) never sees it half written."""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path


def temp_name(path: Path) -> Path:
    """Beside the target (a rename across file systems is not atomic), hidden, and not ending in .prom, so
    the textfile collector, which reads only *.prom, never picks it up."""
    return path.parent / f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp"


def write_atomic(path: Path, text: str) -> None:
    """Write `text` to a temporary file in `path`'s folder, then rename it over `path`.

    A failure leaves `path` as it was and no temporary file. A new file gets the mode open() would give
    it (0666 less the umask: node_exporter usually runs as another user); a replaced file keeps its mode."""
    temp = temp_name(path)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        with contextlib.suppress(FileNotFoundError):
            os.chmod(temp, stat.S_IMODE(path.stat().st_mode))
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
