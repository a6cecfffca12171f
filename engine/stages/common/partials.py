"""Half-written files in a run's shared folder: how stage children name them, and how the runner clears them.

A child writes a shared result to a partial file and moves it into place when whole. One killed while
writing (a timeout, SIGKILL) cannot remove its own; the runner does after the stage, so a full disk is
never kept full by them. Torch-free: the parent imports it.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PARTIAL_SUFFIX = ".partial"


def partial_path(path: Path) -> Path:
    """Where this process writes `path` before moving it into place."""
    return path.with_name(f"{path.name}.{os.getpid()}{PARTIAL_SUFFIX}")


def remove_partials(folder: Path) -> list[Path]:
    """Remove the partial files left in `folder`; the ones removed."""
    removed = []
    for partial in folder.glob(f"*{PARTIAL_SUFFIX}"):
        with contextlib.suppress(OSError):
            partial.unlink()
            removed.append(partial)
    return removed
