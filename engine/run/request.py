"""What a front end asks of the engine for one run, as plain data that crosses into a background engine process."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from rigcheck.engine.registry import StageInfo
from rigcheck.engine.run.codec import decode, encode


@dataclass(frozen=True)
class RunRequest:
    """The stages (whole StageInfos, so the engine needs no registry of its own), where and how to run them."""

    stages: tuple[StageInfo, ...]
    device: str = "cpu"
    profile: str = "standard"
    python: str = sys.executable
    gpus: tuple[str, ...] = ()
    options: dict[str, object] = field(default_factory=dict)
    timeout_s: float | None = None
    serial: bool = False
    peer_tolerance: float | None = None  # a fraction; None keeps the runner's default
    wait_quiet_s: float | None = None
    telemetry: bool = True
    argv: tuple[str, ...] = ()
    force: bool = False  # run even where another live run holds one of these devices
    cold: bool = False  # every stage in a fresh interpreter, no warm child kept between stages
    strict: bool = False  # a WARN verdict fails the run (exit 1): stored with the run when it begins

    @property
    def devices(self) -> tuple[str, ...]:
        """What this run holds, for one run per device: its GPUs, else its one device."""
        return self.gpus or (self.device,)

    def to_json(self) -> str:
        return encode(self)

    @classmethod
    def from_json(cls, text: str) -> RunRequest:
        """The request `to_json` wrote; CodecError (one sentence) for a bad or foreign payload."""
        return decode(cls, text)
