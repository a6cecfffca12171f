"""rigcheck's three themes, each defined once, with the app's own colours as theme variables."""

from __future__ import annotations

from textual.theme import Theme

# The app's own colours; every theme sets each one, and the .tcss refers to nothing else.
APP_VARIABLES = (
    "verdict-pass",
    "verdict-warn",
    "verdict-fail",
    "verdict-skip",
    "verdict-crash",
    "temp-cool",
    "temp-warm",
    "temp-hot",
    "contention",
    "contention-text",
)

DARK = Theme(
    name="rigcheck-dark",
    primary="#5fafd7",
    secondary="#87afaf",
    accent="#d7af5f",
    foreground="#d0d0d0",
    background="#121212",
    surface="#1c1c1c",
    panel="#262626",
    success="#5faf5f",
    warning="#d7af00",
    error="#d75f5f",
    dark=True,
    variables={
        "verdict-pass": "#5faf5f",
        "verdict-warn": "#d7af00",
        "verdict-fail": "#ff5f5f",
        "verdict-skip": "#808080",
        "verdict-crash": "#d75fd7",
        "temp-cool": "#5fafd7",
        "temp-warm": "#d7af00",
        "temp-hot": "#ff5f5f",
        "contention": "#870000",
        "contention-text": "#ffffff",
    },
)

LIGHT = Theme(
    name="rigcheck-light",
    primary="#005f87",
    secondary="#5f8787",
    accent="#875f00",
    foreground="#1c1c1c",
    background="#f5f5f5",
    surface="#ffffff",
    panel="#e4e4e4",
    success="#007f00",
    warning="#875f00",
    error="#af0000",
    dark=False,
    variables={
        "verdict-pass": "#007f00",
        "verdict-warn": "#875f00",
        "verdict-fail": "#af0000",
        "verdict-skip": "#6c6c6c",
        "verdict-crash": "#870087",
        "temp-cool": "#005f87",
        "temp-warm": "#875f00",
        "temp-hot": "#af0000",
        "contention": "#ffd7d7",
        "contention-text": "#5f0000",
    },
)

HIGH_CONTRAST = Theme(
    name="rigcheck-contrast",
    primary="#00ffff",
    secondary="#ffffff",
    accent="#ffff00",
    foreground="#ffffff",
    background="#000000",
    surface="#000000",
    panel="#000000",
    success="#00ff00",
    warning="#ffff00",
    error="#ff0000",
    dark=True,
    variables={
        "verdict-pass": "#00ff00",
        "verdict-warn": "#ffff00",
        "verdict-fail": "#ff0000",
        "verdict-skip": "#c0c0c0",
        "verdict-crash": "#ff00ff",
        "temp-cool": "#00ffff",
        "temp-warm": "#ffff00",
        "temp-hot": "#ff0000",
        "contention": "#ff0000",
        "contention-text": "#ffffff",
    },
)

THEMES = (DARK, LIGHT, HIGH_CONTRAST)
DEFAULT_THEME = DARK.name
VARIABLE_DEFAULTS = dict(DARK.variables)
