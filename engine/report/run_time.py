"""When a stored run started and how long it took, in words: for `show`, `history` and the Markdown export."""

from __future__ import annotations

import datetime as dt
from typing import Any


def took(run: dict[str, Any], now: float | None = None) -> str:
    """`5m 08s`, `42 s`; a live run's time so far as `3m 10s so far` where `now` is given, else `not finished`."""
    start, end = run.get("started"), run.get("finished")
    if not isinstance(start, int | float):
        return "unknown"
    if not isinstance(end, int | float):
        if now is None:
            return "not finished"
        end = now
    seconds = max(0, round(end - start))
    if seconds >= 3600:
        text = f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    else:
        text = f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds} s"
    return text + (" so far" if not isinstance(run.get("finished"), int | float) else "")


def started_at(run: dict[str, Any], utc: bool = False) -> str:
    """`2026-12-03 14:05:11 UTC` (or local time with its zone), or `unknown`."""
    start = run.get("started")
    if not isinstance(start, int | float):
        return "unknown"
    when = dt.datetime.fromtimestamp(start, dt.UTC) if utc else dt.datetime.fromtimestamp(start).astimezone()
    return when.strftime("%Y-%m-%d %H:%M:%S %Z")
