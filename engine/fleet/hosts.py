"""What rank 0 knows of each agent while it collects (HostState), and a few words for a host's last event."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rigcheck.engine.events import Event


@dataclass
class HostState:
    rank: int
    name: str = ""
    state: str = "waiting"  # waiting | running | done | lost
    read: int = 0  # events read so far
    slot: int = 0  # the next slot to read
    seq: int = 0  # the agent's next event number
    final: int | None = None  # slots its end said it used
    sent: int = 0  # events its end said it sent
    beats: int = -1
    beat_seen: float = field(default_factory=time.monotonic)
    last_event: str = "none"
    began: float | None = None  # its own run's start (its clock), for the elapsed times in words
    local_run: str = ""
    looked_ahead: float = 0.0  # when rank 0 last looked past a missing slot
    known: int = 0  # the slots its latest state says it has filled: where to look, not what was sent
    ended: bool = False  # its state says it has written its end
    hinted: set[str] = field(default_factory=set)  # phases its state says it reached
    phases: set[str] = field(default_factory=set)  # phases it reached, seen in their own key
    scanned: float = 0.0  # when rank 0 last scanned it
    scanning: bool = False  # scanned in this poll
    behind: bool = False  # the last read left slots to read: read again next poll
    silence_checked: float = 0.0  # when rank 0 last looked for the end or refusal of a silent host
    answered: str | None = None  # the challenge rank 0 last answered with this run's nonce
    asked_at: float = float("-inf")  # when rank 0 last looked for its ask
    kept_signs: int = 0  # the signs of tampering its agent reported while kept out (handshake.py, kept/RANK)
    tamper: list[str] = field(default_factory=list)  # signs that its keys were deleted or set back (the first few)
    hb_missing_since: float | None = None  # when rank 0 first found its heartbeat missing (None: it is there)
    gone: set[str] = field(default_factory=set)  # its keys seen missing after rank 0 had read them (counted once)

    @property
    def label(self) -> str:
        return self.name or f"rank {self.rank}"


def _elapsed(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def describe(event: Event, began: float | None = None) -> str:
    """A few words for a host's last event, for the lost-host verdict; its time as elapsed in the host's run."""
    kind = type(event).__name__
    stage = getattr(event, "stage", "")
    t = getattr(event, "t", None)
    when = f" {_elapsed(t - began)} into its run" if began is not None and isinstance(t, float) else ""
    if kind == "Measurement":
        return f"{stage}: figure {event.name}{when}"  # type: ignore[union-attr]
    if kind == "Progress":
        return f"{stage}: {event.done}/{event.total} {event.what}".strip() + when  # type: ignore[union-attr]
    if kind == "StageStarted":
        return f"{stage} started{when}"
    if kind == "StageFinished":
        return f"{stage} finished {event.status.value}{when}"  # type: ignore[union-attr]
    return f"{stage}: {kind}{when}"
