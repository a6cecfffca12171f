"""The reference table's file read as untrusted data: a regular file of bounded size holding JSON with finite
numbers only, read as any file a user may have put there (measure/small_file.py: a FIFO is refused at once).
Anything else is BrokenTable, one line naming the file. Standard library only: stage children read the table too."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from rigcheck.engine.measure.small_file import read_small

MAX_BYTES = 4 << 20  # the shipped table is about 60 KiB


class BrokenTable(ValueError):
    """The reference table cannot be used: one line naming its file and what is wrong with it."""


def _no_constant(name: str) -> float:
    raise ValueError(f"{name}, not a finite number")


def read_json(path: Path) -> Any:
    """The JSON value the file at `path` holds; BrokenTable where it is not a regular file, too large, or not JSON."""
    try:
        raw = read_small(path, MAX_BYTES)
    except OSError as error:
        raise BrokenTable(f"the reference table {path} cannot be read ({error.strerror})") from None
    try:
        return json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        said = " ".join(str(error).split())[:200]
        raise BrokenTable(f"the reference table {path} is not JSON ({said})") from None


def positive(value: object, where: str) -> float:
    """`value` as a float where it is a finite number above 0 (never a string, a bool or NaN); else ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{where} is {str(value)[:40]!r}, not a finite number above 0")
    return float(value)
