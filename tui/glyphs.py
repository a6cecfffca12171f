"""Bars and sparks in Unicode or, for terminals without good Unicode, plain ASCII."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Glyphs:
    full: str
    empty: str
    levels: str  # from idle to busy
    plus_minus: str


UNICODE = Glyphs("█", "░", " ▁▂▃▄▅▆▇█", "±")
ASCII = Glyphs("#", ".", " .:-=+*#%@", "+/-")


def bar(fraction: float, width: int, glyphs: Glyphs) -> str:
    filled = max(0, min(width, round(fraction * width)))
    return glyphs.full * filled + glyphs.empty * (width - filled)


def level(fraction: float, glyphs: Glyphs) -> str:
    steps = len(glyphs.levels) - 1
    return glyphs.levels[max(0, min(steps, round(fraction * steps)))]
