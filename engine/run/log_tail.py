"""The last lines of a stage's log that say something about the stage, quoted in a CRASH or TIMEOUT verdict."""

from __future__ import annotations

import re
from pathlib import Path

LOG_TAIL_LINES = 12
# Lines that say nothing about the stage: faulthandler's frames of the child itself, its module list, blanks, and
# the warm child's own housekeeping (`rigcheck child 7 (warm, stage 2 here): ...`, what it put back after a stage)
_BOILERPLATE = re.compile(
    r'^\s*File "(<frozen runpy>|.*/rigcheck/engine/run/child\.py)"|^Extension modules: |^\s*$|^rigcheck child[ :]'
)


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last lines of a stage's log that say something about the stage."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    kept = [line for line in text.rstrip().splitlines() if not _BOILERPLATE.match(line)]
    return "\n".join(kept[-lines:])
