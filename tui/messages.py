"""What the follower thread tells the app about the run it follows: one small message per kind.

The thread only posts these; the app's handlers, on the app's thread, put them on the panels. Progress
and telemetry come often and only the newest matters, so a queued one is replaced by the next
(`can_replace`), as toolong coalesces its PendingLines.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rigcheck.engine.events import Event, Progress
from rigcheck.engine.telemetry.sample import Sample
from textual.message import Message


@dataclass
class RunEvent(Message):
    """One event of the followed run, in the order the engine wrote it."""

    run_id: int
    event: Event


@dataclass
class RunProgress(Message):
    """A stage's progress; only the newest of one stage (and device) waiting in the queue is shown."""

    run_id: int
    event: Progress

    def can_replace(self, message: Message) -> bool:
        return (
            isinstance(message, RunProgress)
            and message.run_id == self.run_id
            and (message.event.stage, message.event.device) == (self.event.stage, self.event.device)
        )


@dataclass
class EngineSamples(Message):
    """Telemetry from the run's own engine: the samples the trust labels are made from.

    `backlog` marks what the engine stored before the app joined (once a second); a live sample
    waiting in the queue is replaced by the next one."""

    run_id: int
    samples: list[Sample]
    notes: list[str] = field(default_factory=list)
    backlog: bool = False

    def can_replace(self, message: Message) -> bool:
        return (
            isinstance(message, EngineSamples)
            and message.run_id == self.run_id
            and not message.backlog
            and not self.backlog
        )


@dataclass
class RunEnded(Message):
    """The followed run is over (or its engine is gone); `error` is the one it stored, if any."""

    run_id: int
    status: str
    error: str | None = None
