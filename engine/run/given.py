"""What the user typed that names a value or a file, read strictly: an empty value is an error, not "not given".

`--store ""` or `RIGCHECK_STORE=` silently meant the default store, `~nouser/x.db` raised RuntimeError from
deep in pathlib, and `--store .` or `/` a ValueError. Each is one line here (UsageError, exit 2). A file read
from the user (a baseline) is read by engine/measure/small_file.py: a size bound, never waiting on a FIFO with
no writer, and never a device (`/dev/zero` would be read until memory ran out).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


class GivenError(ValueError):
    """A value the user gave that will not do; the message is one line naming it."""


def nonempty(text: str) -> str:
    """An argparse `type=`: the value as given, refused when empty (leaving the option out means the default)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give a value, or leave the option out for the default")
    return text


def user_path(text: str, what: str) -> Path:
    """`text` as a path, `~` and `~user` expanded; GivenError when empty or the user has no home here."""
    if not text.strip():
        raise GivenError(f"{what} is empty: give a path, or leave it out for the default")
    try:
        return Path(text).expanduser()
    except (RuntimeError, KeyError):
        user = text[1:].split("/", 1)[0]
        raise GivenError(f"{what} {text}: there is no user {user!r} here, so ~{user} names no folder") from None


def file_path(text: str, what: str) -> Path:
    """As user_path, and naming a file: `.`, `/`, `..` or a trailing `/` name a folder."""
    path = user_path(text, what)
    if text.endswith(("/", "/.", "/..")) or path.name in ("", ".", ".."):
        raise GivenError(f"{what} {text}: names a folder; give a file name")
    return path


def checked(parse: Callable[[str], object], text: str) -> object:
    """`parse(text)`, with a nesting too deep to parse (RecursionError) said as a ValueError."""
    try:
        return parse(text)
    except RecursionError:
        raise ValueError("it is nested too deeply to be a rigcheck file") from None
