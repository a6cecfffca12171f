"""The fleet key and the seal on everything an agent puts on the store: an HMAC (SHA-256) over the value,
bound to the fleet run's id, to the nonce rank 0 made for this run and to the key it is stored under, so
nobody without the key can forge a value, move it into another slot, or replay one recorded in another run.

torchrun's store listens on every interface and anyone who can reach it can write to it; the key is what
makes a fleet safe. Standard library only.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

KEY_ENV = "RIGCHECK_FLEET_KEY"
MIN_KEY_BITS = 128
MAKE_KEY = "openssl rand -hex 32, or python3 -P -c 'import secrets; print(secrets.token_hex(32))'"
MAX_VALUE_BYTES = 4 << 20  # the largest value rank 0 opens (a probe's facts are a few kB); larger is dropped
_HEX = re.compile(r"[0-9a-fA-F]+")
_BASE64 = re.compile(r"(?:[A-Za-z0-9+/]+|[A-Za-z0-9_-]+)={0,2}")  # standard or URL-safe, padding optional
MIN_DISTINCT = 6  # a random 128-bit key in hex repeats fewer than this many characters about once in 10^12


class FleetKeyError(Exception):
    """No usable fleet key in the environment; the message says how to give one."""


def new_key() -> str:
    """A fresh random fleet key: 64 hex digits."""
    return secrets.token_hex(32)


def key_problem(key: str) -> str | None:
    """Why `key` is not a fleet key, or None. A key is hex (4 bits a digit) or base64 (6 bits a character),
    long enough for MIN_KEY_BITS; one made of a few characters, or of one short run repeated, is no random key
    whatever its length (16 spaces, 16 "é", 32 zeros, "abcd" eight times)."""
    text = key.rstrip("=")
    if _HEX.fullmatch(key):
        bits, form = 4 * len(key), "hex"
    elif _BASE64.fullmatch(key):
        bits, form = 6 * len(text), "base64"
    else:
        return "is neither hex nor base64"
    if bits < MIN_KEY_BITS:
        return f"holds {bits} bits as {form}, under {MIN_KEY_BITS}"
    period = next(n for n in range(1, len(text) + 1) if text == (text[:n] * len(text))[: len(text)])
    if len(set(text)) < MIN_DISTINCT or period <= len(text) // 2:
        return "repeats a few characters: it is not a random key"
    return None


def take_key(env: MutableMapping[str, str] | None = None) -> bytes:
    """The fleet key from the environment, removed from it so that no stage child inherits it."""
    env = os.environ if env is None else env
    key = env.pop(KEY_ENV, "")
    if not key:
        raise FleetKeyError(
            f"no fleet key: set {KEY_ENV} to one secret shared by every host (`rigcheck fleet` makes one); "
            f"make one with: {MAKE_KEY}"
        )
    problem = key_problem(key)
    if problem is not None:
        raise FleetKeyError(
            f"{KEY_ENV} {problem}: a fleet key is at least {MIN_KEY_BITS} random bits in hex or base64; "
            f"make one with: {MAKE_KEY}"
        )
    return key.encode()


class Unsealed(Exception):
    """A value read from the store that did not pass: `forged` (its seal fails: another key, or a forgery),
    `replayed` (sealed with the fleet key, but for another fleet run: recorded there and written here) or
    `unreadable` (too large, not JSON, not a sealed value at all)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


BOOTSTRAP = ""  # the nonce of the few values written before an agent has this run's: its ask, rank 0's answer
NONCE_CHARS = 32


def new_nonce() -> str:
    """Rank 0's nonce for one fleet run: what makes a value sealed in this run fail in any other."""
    return secrets.token_hex(NONCE_CHARS // 2)


def is_nonce(text: object) -> bool:
    return isinstance(text, str) and len(text) == NONCE_CHARS and _HEX.fullmatch(text) is not None


def _mac(key: bytes, run_id: str, nonce: str, slot: str, payload: str) -> str:
    message = b"\0".join((b"rigcheck-fleet-2", run_id.encode(), nonce.encode(), slot.encode(), payload.encode()))
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def seal(key: bytes, run_id: str, slot: str, body: Any, nonce: str = BOOTSTRAP) -> str:
    """The text to store under `slot`: the body as JSON and its seal, bound to the run's id, its nonce and slot."""
    payload = json.dumps(body, default=str, allow_nan=False, separators=(",", ":"))
    mac = _mac(key, run_id, nonce, slot, payload)
    return json.dumps({"p": payload, "n": nonce, "m": mac}, separators=(",", ":"))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def loads(text: str | bytes) -> Any:
    """JSON without NaN or Infinity (Python's json takes both by default)."""
    return json.loads(text, parse_constant=_no_constant)


@dataclass(frozen=True)
class Opened:
    body: Any


def unseal(key: bytes, run_id: str, slot: str, raw: bytes, nonce: str = BOOTSTRAP) -> Opened:
    """The body stored under `slot`, once its size, its form and its seal pass for this run's nonce (Unsealed
    if not). A value whose seal holds for the nonce it carries, but that nonce is not this run's, was made with
    the key in another fleet run: a replay, not a forgery."""
    if len(raw) > MAX_VALUE_BYTES:
        raise Unsealed("unreadable", f"{len(raw)} bytes, above the limit of {MAX_VALUE_BYTES}")
    try:
        outer = loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise Unsealed("unreadable", "not JSON") from None
    if not isinstance(outer, dict) or not isinstance(outer.get("p"), str) or not isinstance(outer.get("m"), str):
        raise Unsealed("unreadable", "not a sealed value")
    carried = outer.get("n", BOOTSTRAP)
    if not isinstance(carried, str) or len(carried) > NONCE_CHARS:
        raise Unsealed("unreadable", "not a sealed value")
    if not hmac.compare_digest(outer["m"], _mac(key, run_id, carried, slot, outer["p"])):
        raise Unsealed("forged", "its seal does not match the fleet key")
    if not hmac.compare_digest(carried.encode(), nonce.encode()):
        raise Unsealed("replayed", "sealed with the fleet key for another fleet run (a replay)")
    try:
        return Opened(loads(outer["p"]))
    except (ValueError, RecursionError):
        raise Unsealed("unreadable", "a sealed value that is not JSON") from None
