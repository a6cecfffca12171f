"""Issue 44: serve's log hid only pieces of the token that were pieces of it: a request whose token was wrong in its
last character logged 42 of its 43 characters. Every run sharing a piece of the token is hidden whole now; a word
that shares none is kept."""

from __future__ import annotations

import io
import logging

import pytest
from rigcheck.tui.serve_log import HIDDEN, PIECE, install, redact

TOKEN = "Zq3_k9vTtY2mB8xW-pL4nR7sD1fH6jC0aE5gU9iO2uK"  # 43 characters, as serve makes them


@pytest.mark.parametrize(
    "seen",
    [
        TOKEN,  # the token itself
        TOKEN[:-1] + "X",  # wrong in its last character
        "X" + TOKEN[1:],  # wrong in its first
        TOKEN[:20] + "##" + TOKEN[22:],  # two pieces around a change (each piece long enough)
        TOKEN[10 : 10 + PIECE],  # a piece of it alone
        "prefix" + TOKEN[5:30] + "suffix",  # a part of it inside a longer run
    ],
)
def test_a_token_nearly_right_or_in_part_is_hidden_whole(seen: str) -> None:
    line = redact(f"GET /?token={seen} HTTP/1.1", TOKEN)
    assert TOKEN[:PIECE] not in line and TOKEN[-PIECE:-1] not in line and HIDDEN in line, line
    kept = line.replace(HIDDEN, "")
    assert not any(TOKEN[i : i + PIECE] in kept for i in range(len(TOKEN) - PIECE + 1)), line


def test_words_that_share_no_piece_of_the_token_are_kept() -> None:
    line = "GET /static/app.js HTTP/1.1 aiohttp.access connection_lost"
    assert redact(line, TOKEN) == line
    assert redact(f"token {TOKEN[: PIECE - 1]}", TOKEN) == f"token {TOKEN[: PIECE - 1]}"  # one short of a piece


def test_the_installed_handler_hides_a_nearly_right_token() -> None:
    out = io.StringIO()
    handler = install(TOKEN, stream=out)
    try:
        logging.getLogger("aiohttp.server").error("Error handling request %s", f"/?token={TOKEN[:-1]}Q")
    finally:
        logging.getLogger().removeHandler(handler)
    assert TOKEN[:-1] not in out.getvalue() and HIDDEN in out.getvalue()
