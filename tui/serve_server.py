"""textual-serve's Server with two guards it lacks: the page's own address in its links, and no foreign websockets.

textual-serve writes `http://HOST:PORT` into the page as the websocket's address, which breaks behind an
SSH forward to another local port or a bind to 0.0.0.0; here the page uses the address the browser asked
for. A websocket starts an app that can start runs, and browsers let any page open one to 127.0.0.1, so
a socket whose Origin is another site, or (when bound to loopback) whose Host is not a loopback name,
as in DNS rebinding, is refused.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from aiohttp import web
from rigcheck.tui.loopback import is_loopback
from textual_serve.server import Server


def host_name(netloc: str) -> str:
    """The host part of `host:port`, `[::1]:port` or `host`, without brackets."""
    return urlsplit(f"//{netloc}").hostname or ""


def refusal(request: web.Request, loopback_only: bool) -> str | None:
    """Why this request may not reach the app, or None when it may."""
    if loopback_only and not is_loopback(host_name(request.host)):
        return f"Host {request.host!r} is not a loopback name"
    origin = request.headers.get("Origin")
    if origin is not None and urlsplit(origin).netloc.lower() != request.host.lower():
        return f"Origin {origin!r} is not this page's"
    return None


class RigcheckServer(Server):
    """A textual-serve Server that links to itself as the browser reached it and refuses foreign sockets."""

    def __init__(self, command: str, host: str, port: int, title: str) -> None:
        super().__init__(command, host=host, port=port, title=title)
        self.loopback_only = is_loopback(host)

    async def handle_index(self, request: web.Request) -> Any:
        reason = refusal(request, self.loopback_only)
        if reason is not None:
            raise web.HTTPForbidden(text=f"rigcheck serve: {reason}\n")
        # Read synchronously by the template's context builder before its first await.
        self.public_url = f"{request.scheme}://{request.host}"
        return await super().handle_index(request)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        reason = refusal(request, self.loopback_only)
        if reason is not None:
            raise web.HTTPForbidden(text=f"rigcheck serve: {reason}\n")
        return await super().handle_websocket(request)
