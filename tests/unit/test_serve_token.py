"""serve's token: fresh and long unless the user sets one, checked in constant time, never passed on to the tabs."""

from __future__ import annotations

import hmac

import pytest
from rigcheck.engine.run.preflight import UsageError
from rigcheck.tui import serve_token
from rigcheck.tui.serve_token import TOKEN_ENV, server_token, token_matches


def test_a_fresh_token_each_start() -> None:
    made = {server_token({}) for _ in range(20)}
    assert len(made) == 20
    assert all(len(token) >= 43 and serve_token.GOOD_TOKEN.fullmatch(token) for token in made)  # 256 bits


def test_a_token_the_user_sets_is_used_and_taken_out_of_the_environment() -> None:
    environ = {TOKEN_ENV: "bookmarked_token-0123456789", "OTHER": "kept"}
    assert server_token(environ) == "bookmarked_token-0123456789"
    assert environ == {"OTHER": "kept"}  # the tabs' apps, started with this environment, never see it


@pytest.mark.parametrize("bad", ["", "short", "fifteen-chars-x", "has space in it ok", "slash/in/it/is/bad", "é" * 20])
def test_a_weak_or_unsafe_token_is_refused(bad: str) -> None:
    with pytest.raises(UsageError, match=TOKEN_ENV):
        server_token({TOKEN_ENV: bad})


def test_only_the_same_token_matches() -> None:
    token = "A" * 43
    assert token_matches(token, token)
    for given in (None, "", "A" * 42, "A" * 44, "B" + "A" * 42, "é" * 43, "\udcff" * 43):
        assert not token_matches(given, token), given


def test_the_comparison_is_constant_time(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = []
    real = hmac.compare_digest

    def compare(a: bytes, b: bytes) -> bool:
        seen.append((a, b))
        return real(a, b)

    monkeypatch.setattr(serve_token.hmac, "compare_digest", compare)
    assert token_matches("x" * 43, "x" * 43)
    assert seen == [(b"x" * 43, b"x" * 43)]
