"""How an agent learns its fleet run's nonce (engine/fleet/seal.py): it asks rank 0 with a fresh challenge of its
own, and rank 0 answers with the nonce and that challenge, sealed with the fleet key. An answer recorded in
another run carries another challenge, so it is never taken: every value the agent then seals is this run's.
"""

from __future__ import annotations

import secrets
import time

from rigcheck.engine.fleet.channel import FleetChannel
from rigcheck.engine.fleet.seal import BOOTSTRAP, is_nonce

ASK_AGAIN_S = 2.0  # an agent waiting for its nonce writes its ask again this often (someone may have replaced it)


class NoNonce(Exception):
    """Rank 0 never gave this agent the run's nonce (or refused to start): the agent runs on its own."""


def join(channel: FleetChannel, timeout: float, poll: float = 0.1) -> None:
    """Ask rank 0 for this run's nonce and wait for its answer (NoNonce after `timeout`, or at once when rank
    0 refused to start). Nothing else this agent writes goes out before: every value carries the nonce."""
    challenge = secrets.token_hex(16)
    deadline = time.monotonic() + timeout
    asked = float("-inf")
    while time.monotonic() < deadline:
        if time.monotonic() - asked >= ASK_AGAIN_S:
            channel.put(f"ask/{channel.rank}", {"c": challenge}, BOOTSTRAP)
            asked = time.monotonic()
        found = channel.read(f"nonce/{channel.rank}", BOOTSTRAP)
        body = found.body if found.state == "ok" and isinstance(found.body, dict) else {}
        if body.get("c") == challenge and is_nonce(body.get("nonce")):
            channel.nonce = str(body["nonce"])
            return
        refused = channel.refused(0)
        if refused is not None:
            raise NoNonce(f"rank 0 refused to start: {refused[:500]}")
        time.sleep(poll)
    raise NoNonce(f"rank 0 did not answer within {timeout:g} s")


def answer(channel: FleetChannel, rank: int, last: str | None = None) -> tuple[str | None, bool]:
    """Rank 0: give agent `rank` this run's nonce against the challenge it asked with, unless that challenge
    was answered already (`last`). The challenge answered (`last` when there is no new ask that passes), and
    whether there was an ask at all."""
    found = channel.read(f"ask/{rank}", BOOTSTRAP)
    challenge = found.body.get("c") if found.state == "ok" and isinstance(found.body, dict) else None
    if not is_nonce(challenge) or challenge == last:
        return last, found.state != "missing"
    channel.put(f"nonce/{rank}", {"c": challenge, "nonce": channel.nonce}, BOOTSTRAP)
    return str(challenge), True
