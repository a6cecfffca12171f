"""What a stage is: a function of a frozen spec that yields events and notices cancellation.

Standard library only: the stage child imports this under whatever interpreter it runs in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rigcheck.engine.events import Event

PROFILES = ("quick", "standard", "full")
SHARED_DIR_ENV = "RIGCHECK_SHARED_DIR"  # the run's folder for host work done once, read by every GPU's child
DEVICE_PATTERN = re.compile(r"^(cpu|all|cuda|cuda:\d+(,cuda:\d+)*)$")


@dataclass(frozen=True)
class StageSpec:
    """What was asked of one stage. Options are (name, value) pairs so the spec stays hashable."""

    stage: str
    device: str = "cpu"
    profile: str = "standard"
    options: tuple[tuple[str, Any], ...] = ()

    def option(self, name: str, default: Any = None) -> Any:
        for key, value in self.options:
            if key == name:
                return value
        return default


@dataclass
class StageContext:
    """Handed to a running stage; `cancelled` turns true when the parent asks the child to stop."""

    spec: StageSpec
    cancel_flag: list[bool] = field(default_factory=lambda: [False])

    @property
    def cancelled(self) -> bool:
        return self.cancel_flag[0]


StageFunction = Callable[[StageContext], Iterator[Event]]


def parse_device(text: str) -> str:
    """Normalise a --device value, or raise ValueError with a sentence a person can act on."""
    value = text.strip().lower()
    if not DEVICE_PATTERN.match(value):
        raise ValueError(f"bad device {text!r}: use cpu, cuda, cuda:N, a list like cuda:0,cuda:3, or all")
    if value == "cuda":
        return "cuda:0"
    if "," in value:
        return ",".join(dict.fromkeys(value.split(",")))  # each GPU once, in the order given
    return value
