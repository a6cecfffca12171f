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
    "running": "primary",
}


def status_text(app: App, status: str, label: str | None = None) -> Text:
    variables = app.get_css_variables()
    colour = variables.get(STATUS_VARIABLE.get(status, ""), "")
    return Text(label or status, style=f"bold {colour}" if colour else "bold")
