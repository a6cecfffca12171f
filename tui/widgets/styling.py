"""Verdict and trust text coloured from the current theme's variables."""

from __future__ import annotations

from rich.text import Text
from rigcheck.engine.report.rows import STATUS_CLASS
from textual.app import App

CLASS_VARIABLE = {
    "pass": "verdict-pass",
    "warn": "verdict-warn",
    "fail": "verdict-fail",
    "skip": "verdict-skip",
    "crash": "verdict-crash",
    "inconclusive": "accent",  # could not be judged: neither a pass's colour nor a fail's
    "running": "primary",
}
STATUS_VARIABLE = {status: CLASS_VARIABLE[kind] for status, kind in STATUS_CLASS.items()}


def status_text(app: App, status: str, label: str | None = None) -> Text:
    """The word in its theme colour; a word this version does not know is shown as it is, unstyled."""
    variable = STATUS_VARIABLE.get(status)
    if variable is None:
        return Text(label or status)
    colour = app.get_css_variables().get(variable, "")
    return Text(label or status, style=f"bold {colour}" if colour else "bold")
