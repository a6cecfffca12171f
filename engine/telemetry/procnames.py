"""A process's short name from /proc/PID/comm and its command line from /proc/PID/cmdline, for process
lists; "?" (or None for the command line) where it cannot be read."""

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


def process_cmdline(pid: int, proc: Path = PROC) -> list[str] | None:
    """The process's arguments; None where it ended, is a zombie (whose command line reads empty) or may
    not be read."""
    try:
        raw = (proc / str(pid) / "cmdline").read_bytes()
    except OSError:
        return None
    words = [w.decode("utf-8", "replace") for w in raw.split(b"\0") if w]
    return words or None


def psutil_cmdline(ps: object, pid: int) -> list[str] | None:
    """The same through a psutil module, for hosts without /proc; a process that ended, is a zombie or
    may not be read is None, never an error."""
    try:
        return list(ps.Process(pid).cmdline()) or None  # type: ignore[attr-defined]
    except Exception:
        return None
