"""How an agent learns its fleet run's nonce (engine/fleet/seal.py): it asks rank 0 with a fresh challenge of its
own, and rank 0 answers with the nonce and that challenge, sealed with the fleet key. An answer recorded in
another run carries another challenge, so it is never taken: every value the agent then seals is this run's.

A rank 0 that refuses to start answers the same way, with its refusal in place of the nonce: an agent that waits
for the nonce takes a refusal only in answer to its own challenge. A refusal left on the store without that (one
recorded in an earlier run with the same key and rendezvous id, and written back) never sends an agent off alone.
"""

from __future__ import annotations

import secrets
import time

from rigcheck.engine.fleet.channel import FleetChannel
from rigcheck.engine.fleet.seal import BOOTSTRAP, is_nonce, new_nonce
from rigcheck.engine.store.inert import inert

ASK_AGAIN_S = 2.0  # an agent waiting for its nonce writes its ask again this often (someone may have replaced it)
REFUSAL_SAID = 500  # characters of rank 0's refusal an agent quotes


class NoNonce(Exception):
    """Rank 0 never gave this agent the run's nonce (or refused to start): the agent runs on its own."""


def join(channel: FleetChannel, timeout: float, poll: float = 0.1) -> None:
    """Ask rank 0 for this run's nonce and wait for its answer (NoNonce after `timeout`, or at once when rank
    0 answered this agent's challenge with a refusal). Nothing else this agent writes goes out before: every
    value carries the nonce."""
    challenge = secrets.token_hex(16)
    deadline = time.monotonic() + timeout
    asked = float("-inf")
    while time.monotonic() < deadline:
        if time.monotonic() - asked >= ASK_AGAIN_S:
            channel.put(f"ask/{channel.rank}", {"c": challenge}, BOOTSTRAP)
            asked = time.monotonic()
        found = channel.read(f"nonce/{channel.rank}", BOOTSTRAP)
        body = found.body if found.state == "ok" and isinstance(found.body, dict) else {}
        if body.get("c") == challenge:
            if is_nonce(body.get("nonce")):
                channel.nonce = str(body["nonce"])
                return
            if isinstance(body.get("refused"), str):
                raise NoNonce(f"rank 0 refused to start: {inert(body['refused'])[:REFUSAL_SAID]}")
        time.sleep(poll)
    raise NoNonce(f"rank 0 did not answer within {timeout:g} s")


def answer(
    channel: FleetChannel, rank: int, last: str | None = None, refused: str | None = None
) -> tuple[str | None, bool]:
    """Rank 0: give agent `rank` this run's nonce (or, when rank 0 `refused` to start, that refusal) against the
    challenge it asked with, unless that challenge was answered already (`last`). The challenge answered (`last`
    when there is no new ask that passes), and whether there was an ask at all."""
    found = channel.read(f"ask/{rank}", BOOTSTRAP)
    challenge = found.body.get("c") if found.state == "ok" and isinstance(found.body, dict) else None
    if not is_nonce(challenge) or challenge == last:
        return last, found.state != "missing"
    said = {"refused": refused} if refused is not None else {"nonce": channel.nonce}
    channel.put(f"nonce/{rank}", {"c": challenge, **said}, BOOTSTRAP)
    return str(challenge), True


def refuse_asks(channel: FleetChannel, why: str, timeout: float, poll: float = 0.1) -> int:
    """Rank 0, refusing to start: answer every agent's ask with the refusal, until each has been answered and none
    has asked anew for two rounds of asks (an agent whose ask someone replaced asks again), or `timeout`. How many
    agents were answered."""
    if channel.world <= 1:
        return 0
    answered: dict[int, str | None] = {}
    deadline = time.monotonic() + timeout
    quiet_since = time.monotonic()
    while time.monotonic() < deadline:
        for rank in range(1, channel.world):
            got, _ = answer(channel, rank, answered.get(rank), refused=why)
            if got is not None and got != answered.get(rank):
                answered[rank], quiet_since = got, time.monotonic()
        if len(answered) >= channel.world - 1 and time.monotonic() - quiet_since > 2 * ASK_AGAIN_S:
            break
        time.sleep(poll)
    return len(answered)


def take_nonce(channel: FleetChannel, timeout: float) -> None:
    """Rank 0 makes this run's nonce; every other agent asks rank 0 for it (NoNonce if it never answers)."""
    if channel.rank == 0:
        channel.nonce = new_nonce()
    else:
        join(channel, timeout)
