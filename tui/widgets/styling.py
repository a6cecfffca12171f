"""Verdict and trust text coloured from the current theme's variables."""

from __future__ import annotations

from rich.text import Text
from textual.app import App

STATUS_VARIABLE = {
    "PASS": "verdict-pass",
    "WARN": "verdict-warn",
    "FAIL": "verdict-fail",
    "SKIP": "verdict-skip",
    "CRASH": "verdict-crash",
    "TIMEOUT": "verdict-crash",
    "INTERRUPTED": "verdict-crash",
    "TRUSTED": "verdict-pass",
    "SUSPECT": "verdict-warn",
    "NOISY": "verdict-warn",
    "running": "primary",
    "cancelled": "verdict-skip",
}


def status_text(app: App, status: str, label: str | None = None) -> Text:
    """The word in its theme colour; a word this version does not know is shown as it is, unstyled."""
    variable = STATUS_VARIABLE.get(status)
    if variable is None:
        return Text(label or status)
    colour = app.get_css_variables().get(variable, "")
    return Text(label or status, style=f"bold {colour}" if colour else "bold")
