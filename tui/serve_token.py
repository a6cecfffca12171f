"""serve's secret: one random token per server, as Jupyter's, that every page, file and websocket must carry.

Whoever can reach the port (any local user on 127.0.0.1) could otherwise start runs as serve's user, root
included. The token is made fresh at each start unless RIGCHECK_SERVE_TOKEN names one (for a bookmark that
survives a restart); it is read from the environment, never an option, because `ps` shows every user the
command line. It is taken out of the environment once read, so the tabs' apps and their runs never see it.
"""

from __future__ import annotations

import hmac
import os
import re
import secrets
from collections.abc import MutableMapping

from rigcheck.engine.run.preflight import UsageError

TOKEN_ENV = "RIGCHECK_SERVE_TOKEN"
MIN_LENGTH = 16
# The characters of secrets.token_urlsafe: they go into a URL's path and query unchanged.
GOOD_TOKEN = re.compile(rf"[A-Za-z0-9_-]{{{MIN_LENGTH},}}")


def server_token(environ: MutableMapping[str, str] = os.environ) -> str:
    """RIGCHECK_SERVE_TOKEN (removed from `environ`) when it is set, else a fresh 256-bit token."""
    chosen = environ.pop(TOKEN_ENV, None)
    if chosen is None:
        return secrets.token_urlsafe(32)
    if not GOOD_TOKEN.fullmatch(chosen):
        raise UsageError(
            f"{TOKEN_ENV} must be {MIN_LENGTH} or more of the characters A-Z a-z 0-9 _ - "
            "(python3 -c 'import secrets; print(secrets.token_urlsafe())' makes one)"
        )
    return chosen


def token_matches(given: str | None, token: str) -> bool:
    """Whether a request's token is the server's, compared in constant time (bytes: any text a browser sends)."""
    if given is None:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode())
