"""How an agent learns its fleet run's nonce (engine/fleet/seal.py): it asks rank 0 with a fresh challenge of its
own, and rank 0 answers with the nonce and that challenge, sealed with the fleet key. An answer recorded in
another run carries another challenge, so it is never taken: every value the agent then seals is this run's.

A rank 0 that refuses to start answers the same way, with its refusal in place of the nonce: an agent that waits
for the nonce takes a refusal only in answer to its own challenge. A refusal left on the store without that (one
recorded in an earlier run with the same key and rendezvous id, and written back) never sends an agent off alone.

Anyone who reaches the store may still delete an ask or an answer, write junk in their place, or write back an
answer recorded in another run: none of that needs the key, and it can keep a host out of the fleet. Both sides
watch for it: rank 0 writes its answer again when it is gone or replaced, and counts each sign as tampering on
that host; an agent that is kept out names what it saw (`NoNonce.signs`) rather than "rank 0 did not answer",
and reports it beside its ask (`kept/RANK`, sealed, with its challenge): rank 0 counts what it reports as
tampering even when it never saw the ask, and answers the challenge there too.
"""

from __future__ import annotations

import secrets
import time

from rigcheck.engine.fleet.channel import FleetChannel
from rigcheck.engine.fleet.seal import BOOTSTRAP, is_nonce, new_nonce
from rigcheck.engine.fleet.slots import Read
from rigcheck.engine.store.inert import inert

ASK_AGAIN_S = 2.0  # an agent waiting for its nonce writes its ask again this often (someone may have replaced it)
REFUSAL_SAID = 500  # characters of rank 0's refusal an agent quotes


SIGNS_SAID = 3  # the first few signs of tampering an agent quotes; every one is counted


class NoNonce(Exception):
    """Rank 0 never gave this agent the run's nonce (or refused to start): the agent runs on its own. `signs`:
    how many signs of tampering with its ask or its answer it saw (0: none, rank 0 just did not answer)."""

    def __init__(self, text: str, signs: int = 0) -> None:
        super().__init__(text)
        self.signs = signs


class _Signs:
    """What an agent waiting for its nonce saw that only someone else on the store could have done."""

    def __init__(self) -> None:
        self.said: list[str] = []
        self.seen: set[tuple[str, object]] = set()

    @property
    def count(self) -> int:
        return len(self.seen)

    def add(self, sign: str, which: object) -> None:
        """One sign; `which` tells this one from the same seen again (the value read, the ask it follows)."""
        self.seen.add((sign, which))
        if sign not in self.said:
            self.said.append(sign)

    def kept_out(self, timeout: float) -> NoNonce:
        if not self.count:
            return NoNonce(f"rank 0 did not answer within {timeout:g} s")
        return NoNonce(
            f"the fleet store was tampered with ({self.count} sign(s): {'; '.join(self.said[:SIGNS_SAID])}), "
            f"and rank 0's answer never reached this host within {timeout:g} s: it was kept out of the fleet run",
            self.count,
        )


def _answer_sign(rank: int, found: Read, challenge: str) -> str | None:
    """What a value in this agent's answer slot that is not its answer says: None for nothing (missing)."""
    if found.state == "missing":
        return None
    if found.state != "ok":
        return f"its answer slot nonce/{rank} held a value that does not pass ({found.state})"
    body = found.body if isinstance(found.body, dict) else {}
    if body.get("c") != challenge:
        return f"its answer slot nonce/{rank} held an answer to another challenge (one recorded in another run)"
    return None


def join(channel: FleetChannel, timeout: float, poll: float = 0.1) -> None:
    """Ask rank 0 for this run's nonce and wait for its answer (NoNonce after `timeout`, or at once when rank
    0 answered this agent's challenge with a refusal). Nothing else this agent writes goes out before: every
    value carries the nonce."""
    challenge = secrets.token_hex(16)
    deadline = time.monotonic() + timeout
    asked = float("-inf")
    signs = _Signs()
    reported = 0
    ask = f"ask/{channel.rank}"
    while time.monotonic() < deadline:
        if time.monotonic() - asked >= ASK_AGAIN_S:
            if asked > float("-inf"):  # nobody but this agent writes or removes its ask
                mine = channel.read(ask, BOOTSTRAP)
                if mine.state == "missing":
                    signs.add(f"its request for the run's nonce {ask} vanished", asked)
                elif mine.state != "ok" or not isinstance(mine.body, dict) or mine.body.get("c") != challenge:
                    signs.add(f"its request for the run's nonce {ask} was replaced ({mine.state})", mine.raw)
            channel.put(ask, {"c": challenge}, BOOTSTRAP)
            asked = time.monotonic()
        found = channel.read(f"nonce/{channel.rank}", BOOTSTRAP)
        body = found.body if found.state == "ok" and isinstance(found.body, dict) else {}
        if body.get("c") == challenge:
            if is_nonce(body.get("nonce")):
                channel.nonce = str(body["nonce"])
                return
            if isinstance(body.get("refused"), str):
                raise NoNonce(f"rank 0 refused to start: {inert(body['refused'])[:REFUSAL_SAID]}")
        sign = _answer_sign(channel.rank, found, challenge)
        if sign is not None:
            signs.add(sign, found.raw)
        if signs.count > reported:  # told to rank 0 beside the ask, with the challenge it may answer there too
            reported = signs.count
            channel.put(f"kept/{channel.rank}", {"c": challenge, "signs": reported, "said": signs.said[:3]}, BOOTSTRAP)
        time.sleep(poll)
    raise signs.kept_out(timeout)


def answer(
    channel: FleetChannel, rank: int, last: str | None = None, refused: str | None = None
) -> tuple[str | None, bool, str | None]:
    """Rank 0: give agent `rank` this run's nonce (or, when rank 0 `refused` to start, that refusal) against the
    challenge it asked with, unless that challenge was answered already (`last`). The challenge answered (`last`
    when there is no new ask that passes), whether there was an ask at all, and a sign of tampering when the
    ask there does not pass (junk or a forgery in its place; an agent writes only sealed asks)."""
    found = channel.read(f"ask/{rank}", BOOTSTRAP)
    challenge = found.body.get("c") if found.state == "ok" and isinstance(found.body, dict) else None
    sign = None
    if found.state not in ("ok", "missing") or (found.state == "ok" and not is_nonce(challenge)):
        sign = f"its request for the run's nonce ask/{rank} was replaced by a value that does not pass ({found.state})"
    if not is_nonce(challenge) or challenge == last:
        return last, found.state != "missing", sign
    said = {"refused": refused} if refused is not None else {"nonce": channel.nonce}
    channel.put(f"nonce/{rank}", {"c": challenge, **said}, BOOTSTRAP)
    return str(challenge), True, None


def give_nonce(channel: FleetChannel, rank: int, challenge: str) -> None:
    """Rank 0: agent `rank`'s answer, this run's nonce against its challenge."""
    channel.put(f"nonce/{rank}", {"c": challenge, "nonce": channel.nonce}, BOOTSTRAP)


def answer_kept(channel: FleetChannel, rank: int, challenge: str) -> str | None:
    """Rank 0, while agent `rank` has not joined: whether the answer it gave to `challenge` is still there. When
    someone removed or replaced it, it is written again and the sign returned (else None)."""
    found = channel.read(f"nonce/{rank}", BOOTSTRAP)
    body = found.body if found.state == "ok" and isinstance(found.body, dict) else {}
    if body.get("c") == challenge:
        return None
    give_nonce(channel, rank, challenge)
    if found.state == "missing":
        return f"rank 0's answer nonce/{rank} to its request vanished"
    return _answer_sign(rank, found, challenge)


def kept_report(channel: FleetChannel, rank: int) -> tuple[str, int, str] | None:
    """Rank 0: what agent `rank` reported of its handshake tampered with (kept/RANK, sealed with the fleet key):
    its challenge, how many signs, and their words; None when there is no such report that passes."""
    found = channel.read(f"kept/{rank}", BOOTSTRAP)
    body = found.body if found.state == "ok" and isinstance(found.body, dict) else {}
    signs, said = body.get("signs"), body.get("said")
    if not is_nonce(body.get("c")) or isinstance(signs, bool) or not isinstance(signs, int) or signs < 1:
        return None
    words = "; ".join(inert(str(w))[:200] for w in said[:3]) if isinstance(said, list) else ""
    return str(body["c"]), min(signs, 10**6), words


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
            got, _, _ = answer(channel, rank, answered.get(rank), refused=why)
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
