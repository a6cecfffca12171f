"""Whether an address is this machine only: serve's bind check and the server's Host check share the answer."""

from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (127.0.0.0/8, ::1); a name or other address is not."""
    if host.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
