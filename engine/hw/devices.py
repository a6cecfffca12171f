"""Which driver index a torch device is, by position, when nothing better (a PCI address, a UUID) is known."""

from __future__ import annotations

import os


def nvml_index(device: str, environ: dict[str, str] | None = None) -> int | None:
    """The telemetry index of torch's cuda:N by position, following a numeric CUDA/HIP_VISIBLE_DEVICES:
    the fallback when a figure carries no PCI bus id or UUID."""
    if not device.startswith("cuda"):
        return None
    ordinal = int(device.split(":")[1]) if ":" in device else 0
    env = os.environ if environ is None else environ
    visible = env.get("CUDA_VISIBLE_DEVICES") or env.get("HIP_VISIBLE_DEVICES")
    if visible:
        ids = [part.strip() for part in visible.split(",")]
        if ordinal < len(ids) and ids[ordinal].isdigit():
            return int(ids[ordinal])
    return ordinal
