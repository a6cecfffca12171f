"""Turns a spec's device string into torch devices, with a sentence when the asked-for GPU is not there."""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

import torch
from rigcheck.engine.events import Status, Verdict

T = TypeVar("T")


class DeviceUnavailable(Exception):
    pass


def target_devices(device: str) -> list[torch.device]:
    """cpu -> [cpu]; cuda:N -> [cuda:N]; cuda:0,cuda:3 -> both; all -> every GPU, or the CPU on a host without one."""
    if device == "cpu":
        return [torch.device("cpu")]
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if device == "all":
        return [torch.device(f"cuda:{i}") for i in range(count)] or [torch.device("cpu")]
    indices = [int(part.split(":")[1]) if ":" in part else 0 for part in device.split(",")]
    missing = [f"cuda:{i}" for i in indices if i >= count]
    if missing:
        raise DeviceUnavailable(f"{', '.join(missing)} was asked for but torch sees {count} GPU(s)")
    return [torch.device(f"cuda:{i}") for i in indices]


def resolve_devices(stage: str, device: str) -> Generator[Verdict, None, list[torch.device]]:
    """The devices to run on; where the asked-for GPU is not there, yield a FAIL saying so and return none.

    Use as `devices = yield from resolve_devices(STAGE, spec.device)` inside a stage.
    """
    try:
        return target_devices(device)
    except DeviceUnavailable as error:
        yield Verdict(stage, "device", Status.FAIL, str(error), device=device)
        return []


def has_tf32(device: torch.device) -> bool:
    """TF32 matrix units: NVIDIA compute capability 8.0 and later (Ampere on)."""
    return (
        device.type == "cuda" and torch.version.cuda is not None and torch.cuda.get_device_capability(device) >= (8, 0)
    )


def by_profile(profile: str, quick: T, standard: T, full: T) -> T:
    return {"quick": quick, "standard": standard, "full": full}[profile]
