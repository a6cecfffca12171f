"""What a front end asks of the engine for one run, as plain data that crosses into a background engine process."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field

from rigcheck.engine.registry import StageInfo


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

    @property
    def devices(self) -> tuple[str, ...]:
        """What this run holds, for one run per device: its GPUs, else its one device."""
        return self.gpus or (self.device,)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RunRequest:
        data = json.loads(text)
        tuples = ("extra_paths", "default_in")  # JSON gives lists back
        stages = tuple(
            StageInfo(**(s | {key: tuple(s[key]) for key in tuples if key in s})) for s in data.pop("stages")
        )
        return cls(stages=stages, **(data | {"gpus": tuple(data["gpus"]), "argv": tuple(data["argv"])}))
