"""Messages from the engine's threads to the app; progress messages of one stage coalesce."""

from __future__ import annotations

from dataclasses import dataclass

from rigcheck.engine.events import Event, Progress
from textual.message import Message


@dataclass
class EngineEvent(Message):
    """Any engine event other than progress, posted from the run's supervisor thread."""

    event: Event


@dataclass
class StageProgress(Message):
    """A stage's progress; a newer one for the same stage replaces one still waiting in the queue."""

    event: Progress

    def can_replace(self, message: Message) -> bool:
        return (
            isinstance(message, StageProgress)
            and message.event.stage == self.event.stage
            and message.event.device == self.event.device
        )
