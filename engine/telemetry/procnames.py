"""A process's short name from /proc/PID/comm, for process lists; "?" where it cannot be read."""

from __future__ import annotations

from pathlib import Path

PROC = Path("/proc")


def process_name(pid: int, proc: Path = PROC) -> str:
    try:
        return (proc / str(pid) / "comm").read_text().strip() or "?"
    except (OSError, UnicodeDecodeError):
        return _psutil_name(pid)


def _psutil_name(pid: int) -> str:
    """Where there is no /proc (macOS) psutil knows; a process in another pid namespace is "?"."""
    try:
        import psutil

        return psutil.Process(pid).name() or "?"
    except Exception:
        return "?"
