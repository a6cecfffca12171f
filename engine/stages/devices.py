"""Turns a spec's device string into torch devices, with a sentence when the asked-for GPU is not there."""

from __future__ import annotations

import torch

from ..events import Status, Verdict


class DeviceUnavailable(Exception):
    pass


def target_devices(device: str) -> list[torch.device]:
    """cpu -> [cpu]; cuda:N -> [cuda:N]; all -> every GPU, or the CPU on a host without one."""
    if device == "cpu":
        return [torch.device("cpu")]
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if device == "all":
        return [torch.device(f"cuda:{i}") for i in range(count)] or [torch.device("cpu")]
    index = int(device.split(":")[1]) if ":" in device else 0
    if index >= count:
        raise DeviceUnavailable(f"{device} was asked for but torch sees {count} GPU(s)")
    return [torch.device(f"cuda:{index}")]


def devices_or_failure(stage: str, device: str) -> tuple[list[torch.device], Verdict | None]:
    """The devices to run on, or a FAIL verdict saying the asked-for GPU is not there."""
    try:
        return target_devices(device), None
    except DeviceUnavailable as error:
        return [], Verdict(stage, "device", Status.FAIL, str(error), device=device)


def by_profile(profile: str, quick: object, standard: object, full: object) -> object:
    return {"quick": quick, "standard": standard, "full": full}[profile]
