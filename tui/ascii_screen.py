"""--ascii as a promise: every character that reaches the terminal is ASCII, whoever drew it.

rigcheck's own bars and sparks pick ASCII glyphs themselves; this filter catches the rest (Textual's
borders, tab underlines, scroll bars and ellipses, plotext's plot marks), each cell for a cell.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from rich.cells import cell_len
from rich.segment import Segment
from textual.color import Color
from textual.filter import LineFilter

# Partial blocks from low to full, as rising ASCII marks (sparklines and bars read the same way).
EIGHTHS = dict(zip("▁▂▃▄▅▆▇█", "_.:-=+*#", strict=True))
NAMED = {
    "░": ".",
    "▒": ":",
    "▓": "#",
    "▀": "-",
    "▔": "-",
    "▉": "#",
    "▊": "#",
    "▋": "#",
    "▌": "|",
    "▍": "|",
    "▎": "|",
    "▏": "|",
    "▐": "|",
    "▕": "|",
    "…": "~",
    "–": "-",
    "—": "-",
    "•": "*",
    "‣": ">",
    "◦": "o",
    "▪": "*",
    "★": "*",
    "⭑": "*",
    "⭘": "o",
    "←": "<",
    "→": ">",
    "↑": "^",
    "↓": "v",
    "◀": "<",
    "▶": ">",
    "▲": "^",
    "▼": "v",
    "⏎": "<",
    "⌫": "<",
    "×": "x",
    "±": "~",
    "°": "o",
    "🔎": "/",  # the palette's search mark, as in less and vim
    "\u00a0": " ",
}


def _box(name: str) -> str:
    if "DIAGONAL" in name:
        return {"UPPER RIGHT TO LOWER LEFT": "/", "UPPER LEFT TO LOWER RIGHT": "\\"}.get(
            name.split("DIAGONAL ")[-1], "X"
        )
    words = set(name.split())
    across = bool(words & {"HORIZONTAL", "LEFT", "RIGHT"})
    up_down = bool(words & {"VERTICAL", "UP", "DOWN"})
    return "+" if across and up_down else "-" if across else "|"


def _dots(filled: int, of: int) -> str:
    """Braille cells and quadrant blocks (plot marks) by how much of the cell they fill."""
    if filled == 0:
        return " "
    return "." if filled * 4 <= of else ":" if filled * 2 <= of else "#"


QUADRANTS = {"▖": 1, "▗": 1, "▘": 1, "▝": 1, "▚": 2, "▞": 2, "▙": 3, "▛": 3, "▜": 3, "▟": 3}


@lru_cache(maxsize=4096)
def to_ascii(char: str) -> str:
    """The ASCII for one character, as many cells wide as the character (zero-width ones vanish)."""
    if char.isascii():
        return char
    width = cell_len(char)
    if width == 0:
        return ""
    if char in EIGHTHS:
        return EIGHTHS[char]
    if char in NAMED:
        return NAMED[char].ljust(width)
    if char in QUADRANTS:
        return _dots(QUADRANTS[char], 4)
    if 0x2800 <= ord(char) <= 0x28FF:
        return _dots(bin(ord(char) - 0x2800).count("1"), 8)
    name = unicodedata.name(char, "")
    if name.startswith("BOX DRAWINGS"):
        return _box(name)
    base = unicodedata.normalize("NFKD", char).encode("ascii", "ignore").decode()
    if len(base) == width:
        return base  # é -> e
    return "?" * width


def ascii_text(text: str) -> str:
    return text if text.isascii() else "".join(map(to_ascii, text))


class AsciiOnly(LineFilter):
    """A Textual line filter: applied to every rendered line of every widget, after rendering."""

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        return [
            Segment(text if text.isascii() else ascii_text(text), style, control) for text, style, control in segments
        ]
