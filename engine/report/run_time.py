"""When a stored run started and how long it took, in words: for `show`, `history` and the Markdown export."""

from __future__ import annotations

import datetime as dt
from typing import Any


def took(run: dict[str, Any], now: float | None = None, compact: bool = False) -> str:
    """`5m 08s`, `42 s`; a live run's time so far as `3m 10s so far` where `now` is given, else `not finished`.
    `compact`: one word (`5m08s`, `42s`, `3m10s+` so far, `-` unknown), for a table column."""
    start, end = run.get("started"), run.get("finished")
    if not isinstance(start, int | float):
        return "-" if compact else "unknown"
    if not isinstance(end, int | float):
        if now is None:
            return "-" if compact else "not finished"
        end = now
    seconds = max(0, round(end - start))
    if seconds >= 3600:
        text = f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    else:
        text = f"{seconds // 60}m {seconds % 60:02d}s" if seconds >= 60 else f"{seconds} s"
    live = not isinstance(run.get("finished"), int | float)
    if compact:
        return text.replace(" ", "") + ("+" if live else "")
    return text + (" so far" if live else "")


def started_at(run: dict[str, Any], utc: bool = False) -> str:
    """`2026-12-03 14:05:11 UTC` (or local time with its zone), or `unknown`."""
    start = run.get("started")
    if not isinstance(start, int | float):
        return "unknown"
    when = dt.datetime.fromtimestamp(start, dt.timezone.utc) if utc else dt.datetime.fromtimestamp(start).astimezone()
    return when.strftime("%Y-%m-%d %H:%M:%S %Z")
