"""serve's listening sockets, bound before anything slow: on loopback, both families, or none at all.

Bound to 127.0.0.1 alone, serve left `[::1]:PORT` free for any local user, and a browser or `ssh -L` that
resolves `localhost` to ::1 first (Debian's /etc/hosts) reached her listener with the real token. So a
loopback address binds 127.0.0.1 and ::1 both, and a port taken on either is refused, as a port taken on
the one. A host without IPv6 has no ::1 for anyone to take, so there it is skipped.
"""

from __future__ import annotations

import contextlib
import errno
import ipaddress
import socket

from rigcheck.tui.loopback import is_loopback

LOOPBACKS = ("127.0.0.1", "::1")
NO_FAMILY = (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)


def addresses(host: str) -> list[str]:
    """The addresses to bind for `--host`: a loopback host means both loopback families."""
    if not is_loopback(host):
        return [host]
    given = host.strip("[]")
    if given.lower() == "localhost":
        return list(LOOPBACKS)
    other = "::1" if ipaddress.ip_address(given).version == 4 else "127.0.0.1"
    return [given, other]


def shown(address: str, port: int) -> str:
    """`address:port`, an IPv6 address in brackets."""
    return f"[{address}]:{port}" if ":" in address else f"{address}:{port}"


def bind_one(address: str, port: int) -> socket.socket:
    """A listening TCP socket on `address`, with SO_REUSEADDR as aiohttp sets it (a TIME_WAIT is no owner);
    an OSError names the address in its filename."""
    try:
        return bound_socket(address, port)
    except OSError as error:
        raise OSError(error.errno, error.strerror, shown(address, port)) from None


def bound_socket(address: str, port: int) -> socket.socket:
    infos = socket.getaddrinfo(address, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    family, kind, proto, _name, where = infos[0]
    listener = socket.socket(family, kind, proto)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        listener.bind(where)
        listener.listen(128)
        listener.setblocking(False)
    except BaseException:
        listener.close()
        raise
    return listener


def listen(host: str, port: int) -> list[socket.socket]:
    """Every socket serve listens on; OSError (EADDRINUSE when another program holds one) when any cannot be
    bound, with those already bound closed. Only a loopback family this host lacks is left out."""
    bound: list[socket.socket] = []
    loopback = is_loopback(host)
    try:
        for address in addresses(host):
            try:
                bound.append(bind_one(address, port))
            except OSError as error:
                if loopback and bound and error.errno in NO_FAMILY:
                    continue  # this host has no such loopback: nobody can take it either
                raise
    except BaseException:
        for listener in bound:
            with contextlib.suppress(OSError):
                listener.close()
        raise
    return bound
