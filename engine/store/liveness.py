"""Is a process still the one a run row names? PID reuse must not keep a dead run alive."""

from __future__ import annotations

import psutil


def process_alive(pid: int | None, since: float) -> bool:
    """True when `pid` is still the process that started at or before `since` (guards PID reuse)."""
    if not pid:
        return False
    try:
        proc = psutil.Process(pid)
        return proc.create_time() <= since + 1.0 and proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
