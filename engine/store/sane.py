"""Stored numbers are untrusted as stored text is: a figure's value that is NULL (SQLite's NaN) or text, or a time
of 1e308, crashed `show`, `follow`, `runs`, the app and several exports. Read back, each number column holds a
finite number (a time, one within the calendar) or None, which every front end shows as unknown."""

from __future__ import annotations

import math
from typing import Any

LATEST_TIME = 253402300799.0  # 9999-12-31 23:59:59 UTC: the last second datetime can show
TIME_COLUMNS = ("started", "finished", "t", "first_seen")
NUMBER_COLUMNS = ("value", "spread", "tolerance")
WHOLE_COLUMNS = ("exit_code", "repeats", "pid")


def number(value: Any) -> float | None:
    """A finite int or float as it is; anything else (None, text, bytes, inf, NaN) None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value if math.isfinite(value) else None


def time_of(value: Any) -> float | None:
    """A time datetime can show (from 1970 to 9999), else None."""
    found = number(value)
    return found if found is not None and 0 <= found <= LATEST_TIME else None


def sane_row(row: dict[str, Any]) -> dict[str, Any]:
    """One stored row with its number columns read as numbers or None (its text columns are inert's job)."""
    for key in TIME_COLUMNS:
        if key in row:
            row[key] = time_of(row[key])
    for key in NUMBER_COLUMNS:
        if key in row:
            row[key] = number(row[key])
    for key in WHOLE_COLUMNS:
        if key in row and not (isinstance(row[key], int) and not isinstance(row[key], bool)):
            row[key] = None
    return row
