"""Stored text is untrusted (SECURITY.md): the one function that makes it inert before any front end shows it,
and its walk over a whole report. A verdict, a process name or a fleet host's text may hold terminal escapes or
bidi marks; `show`, `compare`, the app and every export get them taken out here, when the store is read."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: titles, hyperlinks, clipboard
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS, SOS, PM, APC strings
    r"|\x1b."  # any other escape
    r"|\x9b[0-?]*[ -/]*[@-~]"  # the 8-bit CSI
)

_PLAIN = re.compile(r"[ -~]*")  # printable ASCII: no escape, control or bidi character can be in it
_PLAIN_LINES = re.compile(r"[\t\n -~]*")


def inert(text: str, lines: bool = False) -> str:
    """`text` without terminal escapes or control characters (with `lines`, tabs and newlines kept):
    nothing in it can move a cursor, recolour or retitle a terminal, or hide text by bidi tricks."""
    if (_PLAIN_LINES if lines else _PLAIN).fullmatch(text):
        return text  # the common case, a thousand hosts' events a second: nothing to take out
    text = _ESCAPES.sub("", text)
    keep = "\t\n" if lines else ""
    return "".join(
        ch if ch in keep or unicodedata.category(ch) not in ("Cc", "Cf", "Cs", "Zl", "Zp") else "" for ch in text
    )


def inert_report(value: Any) -> Any:
    """Every string in a report (keys too) made inert, newlines and tabs kept; other values as they are."""
    if isinstance(value, str):
        return inert(value, lines=True)
    if isinstance(value, dict):
        return {inert_report(k) if isinstance(k, str) else k: inert_report(v) for k, v in value.items()}
    if isinstance(value, list):
        return [inert_report(v) for v in value]
    return value
