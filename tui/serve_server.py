"""textual-serve's Server with the guards it lacks: a token on every route, no foreign sockets, its own links.

textual-serve has no authentication, so any local user who reaches the port could start runs as serve's user.
Here every request must carry the server's token (serve_token.py): the page as `/?token=T`, and the page's
own files and websocket under `/T/`, which the page's links carry, so no cookie is needed (a cookie for
127.0.0.1 would also go to every other port of the machine). A request without it, or with a wrong one, gets
403. textual-serve's download route is not served: rigcheck's app delivers no files, and textual's script
builds that link without the token.

A websocket starts an app that can start runs, and browsers let any page open one to 127.0.0.1, so a request
whose Origin is another site, or (when bound to loopback) whose Host is not a loopback name, as in DNS
rebinding, is refused too. The page's links use the address the browser asked for, not `http://HOST:PORT`,
so an SSH forward to another local port or a bind to 0.0.0.0 works.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from rigcheck.tui.loopback import is_loopback
from rigcheck.tui.serve_token import token_matches
from textual_serve.server import Server, to_int

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
SHUTDOWN_S = 2.0  # after SIGINT or SIGTERM, how long open tabs get before their sessions are cut


def host_name(netloc: str) -> str:
    """The host part of `host:port`, `[::1]:port` or `host`, without brackets."""
    return urlsplit(f"//{netloc}").hostname or ""


def refusal(request: web.Request, loopback_only: bool) -> str | None:
    """Why this request's Host or Origin may not reach the app, or None when they may."""
    if loopback_only and not is_loopback(host_name(request.host)):
        return f"Host {request.host!r} is not a loopback name"
    origin = request.headers.get("Origin")
    if origin is not None and urlsplit(origin).netloc.lower() != request.host.lower():
        return f"Origin {origin!r} is not this page's"
    return None


class AccessLog(AbstractAccessLogger):
    """One line a request, naming the route and never the path or query, which hold the token."""

    def log(self, request: web.BaseRequest, response: web.StreamResponse, time: float) -> None:
        route = getattr(getattr(request, "match_info", None), "route", None)
        name = getattr(route, "name", None) or "no such path"
        self.logger.info('%s "%s %s" %s', request.remote, request.method, name, response.status)


async def private_headers(request: web.Request, response: web.StreamResponse) -> None:
    """No Referer carries the tokened address to another site (the page asks Google Fonts for a font), and no
    cache keeps the page."""
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"


class RigcheckServer(Server):
    """A textual-serve Server behind a token, that links to itself as the browser reached it."""

    def __init__(
        self, command: str, host: str, port: int, title: str, token: str, on_listening: Callable[[], None]
    ) -> None:
        super().__init__(command, host=host, port=port, title=title)
        self.loopback_only = is_loopback(host)
        self.token = token
        self.on_listening = on_listening

    async def _make_app(self) -> web.Application:
        @web.middleware
        async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            return await self.guard(request, handler)

        app = web.Application(middlewares=[guard])
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes(
            [
                web.get("/", self.handle_index, name="index"),
                web.get("/{token}/ws", self.handle_websocket, name="websocket"),
                web.get("/{token}/static/{filename:.+}", self.handle_static, name="static"),
            ]
        )
        app.on_response_prepare.append(private_headers)
        return app

    async def guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        """403 for a foreign Origin, a rebound Host, or a missing or wrong token; else the route's handler."""
        reason = refusal(request, self.loopback_only)
        if reason is None and not token_matches(
            request.match_info.get("token", request.query.get("token")), self.token
        ):
            reason = "this address needs the token that `rigcheck serve` printed: open http://HOST:PORT/?token=..."
        if reason is not None:
            raise web.HTTPForbidden(text=f"rigcheck serve: {reason}\n")
        return await handler(request)

    async def handle_index(self, request: web.Request) -> web.Response:
        """The page, linking its files and websocket under /TOKEN/ at the address the browser used."""
        base = f"{request.host}/{self.token}"
        socket_scheme = "wss" if request.scheme == "https" else "ws"
        context = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{socket_scheme}://{base}/ws",
            "config": {"static": {"url": f"{request.scheme}://{base}/static/"}},
            "application": {"name": self.title},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    async def handle_static(self, request: web.Request) -> web.FileResponse:
        """textual-serve's own files (script, styles, fonts); no listing, nothing outside its folder."""
        root = self.statics_path.resolve()
        path = (root / request.match_info["filename"]).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            raise web.HTTPNotFound()
        return web.FileResponse(path)

    def serve(self, debug: bool = False) -> None:
        """Listen until SIGINT or SIGTERM; an address that cannot be bound raises OSError before anything is said."""
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        for stop in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(stop, self.request_exit)
        web.run_app(
            self._make_app(),
            host=self.host,
            port=self.port,
            handle_signals=False,
            loop=loop,
            # an open tab's websocket handler would keep aiohttp waiting up to its 60 s default after Ctrl-C;
            # past this its handler is cancelled, which stops that tab's app process
            shutdown_timeout=SHUTDOWN_S,
            print=lambda _message: self.on_listening(),  # called once every socket is bound
            access_log_class=AccessLog,
        )
