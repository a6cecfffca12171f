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

Each tab's app is a serve_tabs.TabApp (no shell, isolated start, always ended); serve's log goes through
serve_log's redacting handler, and its sockets are bound beforehand by serve_bind.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import signal
import socket
from collections.abc import Awaitable, Callable
from urllib.parse import urlsplit

import aiohttp_jinja2
import jinja2
from aiohttp import web
from aiohttp.abc import AbstractAccessLogger
from rigcheck.tui import serve_log
from rigcheck.tui.loopback import is_loopback
from rigcheck.tui.serve_tabs import TabApp
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
        try:  # a request that could not be parsed has no match_info: reading it raises
            name = getattr(request.match_info.route, "name", None) or "no such path"
        except Exception:
            name = "unreadable request"
        self.logger.info('%s "%s %s" %s', request.remote, request.method, name, response.status)


async def private_headers(request: web.Request, response: web.StreamResponse) -> None:
    """No Referer carries the tokened address to another site (the page asks Google Fonts for a font), and no
    cache keeps the page."""
    response.headers["Referrer-Policy"] = "no-referrer"
    response.headers["Cache-Control"] = "no-store"


class RigcheckServer(Server):
    """A textual-serve Server behind a token, that links to itself as the browser reached it."""

    def __init__(
        self,
        argv: list[str],
        sockets: list[socket.socket],
        host: str,
        title: str,
        token: str,
        on_listening: Callable[[], None],
    ) -> None:
        super().__init__(" ".join(argv), host=host, port=sockets[0].getsockname()[1], title=title)
        self.argv = argv
        self.sockets = sockets
        self.loopback_only = is_loopback(host)
        self.token = token
        self.on_listening = on_listening
        self.tabs: set[TabApp] = set()

    def initialize_logging(self) -> None:
        """Plain lines on stderr, the token hidden in each, no traceback locals (textual-serve shows them)."""
        serve_log.install(self.token, debug=self.debug)

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
        app.on_shutdown.append(self.end_tabs)
        return app

    async def end_tabs(self, _app: web.Application | None = None) -> None:
        """At shutdown, end every tab's app (each asked, then signalled), together, within their grace."""
        await asyncio.gather(*(tab.stop() for tab in list(self.tabs)), return_exceptions=True)

    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:
        """The tab's socket, driving its own app; a request that is not a websocket gets 400, not a traceback."""
        websocket = web.WebSocketResponse(heartbeat=15)
        if not websocket.can_prepare(request).ok:
            raise web.HTTPBadRequest(text="rigcheck serve: this address is the page's websocket\n")
        tab: TabApp | None = None
        try:
            await websocket.prepare(request)
            tab = TabApp(
                self.argv,
                self.tabs,
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=websocket.close,
                download_manager=self.download_manager,
                debug=self.debug,
            )
            await tab.start(to_int(request.query.get("width", "80"), 80), to_int(request.query.get("height", "24"), 24))
            await self._process_messages(websocket, tab)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                await websocket.close()
            raise
        except (ConnectionError, ValueError, TypeError, KeyError, IndexError, AssertionError):
            pass  # a socket gone, or a message that is not textual-serve's: the tab ends
        finally:
            if tab is not None:
                await tab.stop()
        return websocket

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
        page = aiohttp_jinja2.render_template("app_index.html", request, context)
        # textual-serve's page has no <title>: the browser would show its address, the token in it, as the tab's name
        page.text = (page.text or "").replace("<head>", f"<head>\n    <title>{html.escape(self.title)}</title>", 1)
        return page

    async def handle_static(self, request: web.Request) -> web.FileResponse:
        """textual-serve's own files (script, styles, fonts); no listing, nothing outside its folder."""
        root = self.statics_path.resolve()
        path = (root / request.match_info["filename"]).resolve()
        if not path.is_relative_to(root) or not path.is_file():
            raise web.HTTPNotFound()
        return web.FileResponse(path)

    def serve(self, debug: bool = False) -> None:
        """Listen on the sockets bound before until SIGINT or SIGTERM; every tab's app ends before this returns."""
        self.debug = debug
        self.initialize_logging()
        loop = asyncio.new_event_loop()
        for stop in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(stop, self.request_exit)
        try:
            self.run(loop)
        finally:
            for tab in list(self.tabs):  # whatever the loop could not end in time
                tab.kill_now()

    def run(self, loop: asyncio.AbstractEventLoop) -> None:
        web.run_app(
            self._make_app(),
            sock=self.sockets,
            handle_signals=False,
            loop=loop,
            # an open tab's websocket handler would keep aiohttp waiting up to its 60 s default after Ctrl-C;
            # past this its handler is cancelled, which stops that tab's app process
            shutdown_timeout=SHUTDOWN_S,
            print=lambda _message: self.on_listening(),  # called once the server listens
            access_log_class=AccessLog,
        )
