"""The fleet key and the seal on everything an agent puts on the store: an HMAC (SHA-256) over the value,
bound to the fleet run, to a nonce rank 0 makes fresh for each run, and to the key it is stored under, so
nobody without the key can forge, move or replay a value into another slot, and a value sealed for an
earlier run with the same `--rdzv-id` and key is told apart (a replay) and dropped.

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
MIN_KEY_CHARS = 16
MAX_VALUE_BYTES = 4 << 20  # the largest value rank 0 opens (a probe's facts are a few kB); larger is dropped


class FleetKeyError(Exception):
    """No usable fleet key in the environment; the message says how to give one."""


HEX_KEY = re.compile(r"[0-9a-fA-F]+")
BASE64_KEY = re.compile(r"[A-Za-z0-9+/_-]+={0,2}")
MIN_KEY_BITS = 128
HOW_TO_MAKE = f"export {KEY_ENV}=$(python3 -c 'import secrets; print(secrets.token_hex(32))')"


def key_problem(key: str) -> str | None:
    """What makes `key` too weak for a fleet (None when it will do): it must be hex or base64 carrying at
    least 128 bits, and not a few characters repeated."""
    if HEX_KEY.fullmatch(key):
        bits = 4 * len(key)
    elif BASE64_KEY.fullmatch(key):
        bits = 6 * len(key.rstrip("="))
    else:
        return "is not hex or base64"
    if bits < MIN_KEY_BITS:
        return f"holds {bits} bits, fewer than {MIN_KEY_BITS}"
    if len(set(key)) < 8:
        return "repeats too few characters to be random"
    return None


def new_key() -> str:
    """A fresh random fleet key: 64 hex digits."""
    return secrets.token_hex(32)


def take_key(env: MutableMapping[str, str] | None = None) -> bytes:
    """The fleet key from the environment, removed from it so that no stage child inherits it."""
    env = os.environ if env is None else env
    key = env.pop(KEY_ENV, "")
    if not key:
        raise FleetKeyError(
            f"no fleet key: set {KEY_ENV} to one secret shared by every host (`rigcheck fleet` makes one), "
            "e.g. export RIGCHECK_FLEET_KEY=$(python3 -c 'import secrets; print(secrets.token_hex(32))')"
        )
    problem = key_problem(key)
    if problem:
        raise FleetKeyError(
            f"{KEY_ENV} {problem}: use {MIN_KEY_BITS} random bits or more, as hex or base64: {HOW_TO_MAKE}"
        )
    return key.encode()


class Unsealed(Exception):
    """A value read from the store that did not pass: `forged` (its seal fails: another key, or a forgery),
    `replayed` (sealed with the key, but for another fleet run's nonce) or `unreadable` (too large, not JSON,
    not a sealed value at all)."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def _mac(key: bytes, run_id: str, slot: str, payload: str, nonce: str = "") -> str:
    message = b"\0".join((b"rigcheck-fleet-2", run_id.encode(), nonce.encode(), slot.encode(), payload.encode()))
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def seal(key: bytes, run_id: str, slot: str, body: Any, nonce: str = "") -> str:
    """The text to store under `slot`: the body as JSON, the run's nonce, and its seal."""
    payload = json.dumps(body, default=str, allow_nan=False, separators=(",", ":"))
    outer = {"p": payload, "n": nonce, "m": _mac(key, run_id, slot, payload, nonce)}
    return json.dumps(outer, separators=(",", ":"))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def loads(text: str | bytes) -> Any:
    """JSON without NaN or Infinity (Python's json takes both by default)."""
    return json.loads(text, parse_constant=_no_constant)


@dataclass(frozen=True)
class Opened:
    body: Any


def unseal(key: bytes, run_id: str, slot: str, raw: bytes, nonce: str = "", also: tuple[str, ...] = ()) -> Opened:
    """The body stored under `slot`, once its size, its form and its seal pass for this run's `nonce` (or one
    of `also`); Unsealed if not, `replayed` when it was sealed with the key for another run."""
    if len(raw) > MAX_VALUE_BYTES:
        raise Unsealed("unreadable", f"{len(raw)} bytes, above the limit of {MAX_VALUE_BYTES}")
    try:
        outer = loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise Unsealed("unreadable", "not JSON") from None
    if not isinstance(outer, dict) or not isinstance(outer.get("p"), str) or not isinstance(outer.get("m"), str):
        raise Unsealed("unreadable", "not a sealed value")
    given = outer.get("n", "")
    if not isinstance(given, str) or len(given) > 128:
        raise Unsealed("unreadable", "not a sealed value")
    if not hmac.compare_digest(outer["m"], _mac(key, run_id, slot, outer["p"], given)):
        raise Unsealed("forged", "its seal does not match the fleet key")
    if given != nonce and given not in also:
        raise Unsealed("replayed", f"sealed with the fleet key for another fleet run (nonce {given[:8]!r})")
    try:
        return Opened(loads(outer["p"]))
    except (ValueError, RecursionError):
        raise Unsealed("unreadable", "a sealed value that is not JSON") from None
