"""What rank 0 dropped from the store, per host: values whose seal failed, values too large or not JSON,
events that failed their schema, and events of an agent that someone overwrote before rank 0 read them.
Each host with any is a WARN at the end of the fleet run; what cannot be told apart by sender is counted
on the host "(unknown)".
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from rigcheck.engine.events import Status, Verdict

UNKNOWN = "(unknown)"


@dataclass
class Dropped:
    forged: int = 0  # its seal failed: written without the fleet key (or with another one)
    unreadable: int = 0  # too large, not JSON, not sealed
    malformed: int = 0  # sealed, but not what its kind must be
    replayed: int = 0  # sealed with the key for another fleet run (same id and key): recorded and played back
    overwritten: int = 0  # this host's own events that another writer replaced before rank 0 read them
    first: str = ""  # the first reason, quoted in the verdict
    seen: set[str] = field(default_factory=set)  # digests of bad values already counted (slots read again)

    def count(self, reason: str, detail: str, raw: bytes = b"", slot: str = "") -> bool:
        """Count one bad value once (a heartbeat slot read every poll is counted once per value); False when
        it was counted before."""
        if raw:
            digest = hashlib.sha256(slot.encode() + b"\0" + raw).hexdigest()
            if digest in self.seen:
                return False
            self.seen.add(digest)
        setattr(self, reason, getattr(self, reason) + 1)
        if not self.first:
            self.first = f"{slot}: {detail}" if slot else detail
        return True

    @property
    def total(self) -> int:
        return self.forged + self.unreadable + self.malformed + self.replayed + self.overwritten


def dropped_verdict(host: str, dropped: Dropped, local_run: str = "") -> Verdict:
    """The WARN on `host` that says what rank 0 dropped from it and why it matters."""
    parts = []
    if dropped.forged:
        parts.append(f"{dropped.forged} failed the fleet key check")
    if dropped.unreadable:
        parts.append(f"{dropped.unreadable} could not be read (too large, or not a sealed value)")
    if dropped.malformed:
        parts.append(f"{dropped.malformed} failed their schema")
    if dropped.replayed:
        parts.append(f"{dropped.replayed} were sealed for another fleet run (replayed)")
    text = f"rank 0 dropped {dropped.total - dropped.overwritten} value(s) from the fleet's store for {host}: "
    text += ", ".join(parts) if parts else "none"
    text += f" (first: {dropped.first[:200]})" if dropped.first else ""
    if dropped.total - dropped.overwritten - dropped.replayed:
        text += (
            "; someone without the fleet key wrote to the store (torchrun's store listens on every interface), "
            "or an agent was started with another RIGCHECK_FLEET_KEY"
        )
    if dropped.replayed:
        text += (
            "; values of an earlier fleet run with the same id and key were played back into this one: "
            "use a new --rdzv-id for each fleet run, and a new key when the store is reachable by others"
        )
    if dropped.overwritten:
        text += f"; {dropped.overwritten} of the host's own event(s) were overwritten before rank 0 read them"
        text += f" ({local_run} holds them all)" if local_run else " (the host's own store holds them all)"
    numbers = {
        "forged": dropped.forged,
        "unreadable": dropped.unreadable,
        "malformed": dropped.malformed,
        "replayed": dropped.replayed,
        "overwritten": dropped.overwritten,
    }
    return Verdict("fleet", "fleet-channel", Status.WARN, text, numbers)
