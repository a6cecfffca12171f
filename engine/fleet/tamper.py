"""Signs that someone deleted or set back an agent's keys on the fleet's store, and the verdict on a host that
went silent after them: "the fleet store was tampered with", never a lost host, when the evidence allows.

An agent never deletes a key and its counters only rise, so a key rank 0 had read that is gone (with no end
marker from the agent), a gap in its event slots, or a heartbeat or slot count that went back, is someone
else's doing. Deleting keys needs no fleet key: it cannot put words in rank 0's run, but it can silence a
healthy host, and the report must say who did that.
"""

from __future__ import annotations

from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.fleet.hosts import HostState
from rigcheck.engine.fleet.intake import Dropped

SIGNS_QUOTED = 3  # the first few signs are quoted; every one is counted


def tampered(host: HostState, dropped: Dropped, sign: str, key: str = "", count: int = 1) -> None:
    """Count `count` signs on `host` (a key gone is counted once until it is seen again) and keep its words."""
    if key:
        if key in host.gone:
            return
        host.gone.add(key)
    dropped.tampered += count
    if len(host.tamper) < SIGNS_QUOTED:
        host.tamper.append(sign)


def seen_again(host: HostState, key: str) -> None:
    """A key read back after it was gone: its next disappearance is a new sign."""
    host.gone.discard(key)


def lost_verdict(host: HostState, why: str, refused: bool = False) -> Verdict:
    """The verdict on a host rank 0 stops waiting for: tampering where there were signs of it, else lost."""
    numbers = {"rank": host.rank, "events": host.read, "refused": refused, "tampered": len(host.tamper)}
    if refused:
        return Verdict("fleet", "agent", Status.CRASH, f"{host.label}: {why}; the other hosts carried on", numbers)
    where = host.local_run or "its own store"
    if host.tamper:
        text = (
            f"the fleet store was tampered with: {'; '.join(host.tamper)}; {host.label} then went silent on it "
            f"({why}), which says nothing against the host itself: {where} holds all its results (its last event "
            f"here: {host.last_event}); the other hosts carried on"
        )
        return Verdict("fleet", "fleet-store", Status.CRASH, text, numbers)
    text = (
        f"{host.label} is lost: {why} (its last event: {host.last_event}); its results up to then are kept, "
        "and the other hosts carried on"
    )
    return Verdict("fleet", "agent", Status.CRASH, text, numbers)
