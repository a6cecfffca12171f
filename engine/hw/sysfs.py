"""Reads one small sysfs (or procfs) file, answering None where it is absent, unreadable or not a number."""

from __future__ import annotations

from pathlib import Path


def read_text(path: Path) -> str | None:
    """The file's text, stripped of surrounding white space, or None."""
    try:
        return path.read_text().strip()
    except OSError:
        return None


def read_int(path: Path) -> int | None:
    text = read_text(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def read_float(path: Path) -> float | None:
    text = read_text(path)
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None
