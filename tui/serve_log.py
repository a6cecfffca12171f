"""serve's log, which never holds its token: every logger's lines pass one redacting handler.

The token is in every page's path and query, so anything that logs a request line (aiohttp's parser error
with the raw bytes, a traceback with its frames' locals) would write it out. textual-serve's own logging
shows tracebacks with their locals; here every record, its message, its arguments and its traceback, is
formatted as plain text and any run of the token's characters that shares a piece with the token (a copy, a
part, a nearly-right guess) is replaced whole before the line is written.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import TextIO

HIDDEN = "<token>"
PIECE = 6  # a run this long that is part of the token is hidden: a truncated copy still gives bits away
TOKEN_CHARS = re.compile(rf"[A-Za-z0-9_-]{{{PIECE},}}")


def redact(text: str, token: str) -> str:
    """`text` with every run of token characters that shares a piece of PIECE characters with the token hidden
    whole: a copy of it, a part of it, and a nearly-right one (a guess wrong in its last character once logged
    42 of the token's 43 characters)."""
    pieces = {token[i : i + PIECE] for i in range(len(token) - PIECE + 1)}

    def hide(run: re.Match[str]) -> str:
        found = run[0]
        near = any(found[i : i + PIECE] in pieces for i in range(len(found) - PIECE + 1))
        return HIDDEN if near or found in token else found

    return TOKEN_CHARS.sub(hide, text)


class Redacting(logging.Formatter):
    """A plain formatter (no locals, no colour) whose whole output, traceback included, is redacted."""

    def __init__(self, token: str) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")
        self.token = token

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record), self.token)


def install(token: str, debug: bool = False, stream: TextIO | None = None) -> logging.Handler:
    """Make the root logger's one handler redacting, for every logger that propagates to it, and bring the
    loggers that do not (or hold handlers of their own) under it too."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(Redacting(token))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    for name in list(logging.Logger.manager.loggerDict):
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            logger.removeHandler(old)
        logger.propagate = True
    logging.lastResort = handler  # type: ignore[assignment]
    return handler
