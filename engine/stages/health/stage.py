"""Health: what the GPU driver already knows about each card (memory errors, link, power, clocks at idle).

Fast and read-only, apart from a short host-to-device copy that wakes a PCIe link found below its
maximum, because an idle GPU lowers its link speed to save power and would read as a fault.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import Any

from rigcheck.engine.events import Event, Facts, Progress, Status, Verdict
from rigcheck.engine.facts.amd_health import AmdHealthReader
from rigcheck.engine.facts.health_model import GpuHealth, HealthReader, Missing
from rigcheck.engine.facts.nvidia_health import NvidiaHealthReader, NvmlBroken
from rigcheck.engine.hw.amdgpu import DRM_ROOT
from rigcheck.engine.hw.devices import nvml_index
from rigcheck.engine.hw.pci import torch_bus_id
from rigcheck.engine.stage import StageContext
from rigcheck.engine.stages.health.checks import STAGE, gpu_verdicts

Load = Callable[[str], contextlib.AbstractContextManager[bool]]
WAKE_S = 0.3  # long enough for the link to train up to speed under a copy


def open_readers(drm_root: Path = DRM_ROOT) -> tuple[list[HealthReader], list[str], list[str]]:
    """Every vendor reader that finds GPUs; why the others found none; and drivers present but failing."""
    readers: list[HealthReader] = []
    absent, broken = [], []
    try:
        readers.append(NvidiaHealthReader())
    except OSError as error:
        absent.append(f"NVML not usable ({error})")
    except NvmlBroken as error:  # the library is there and fails: e.g. a driver upgraded without a reboot
        broken.append(f"the NVIDIA driver's NVML is installed but fails to start: {error}")
    try:
        readers.append(AmdHealthReader(drm_root))
    except RuntimeError as error:
        absent.append(str(error))
    return readers, absent, broken


def torch_labels(torch: Any) -> dict[str, str]:
    """PCI bus id -> "cuda:N" for every GPU torch sees (NVML and torch may count GPUs in different orders).

    A torch too old to report PCI ids falls back on NVML's index through CUDA_VISIBLE_DEVICES, as the
    parent's telemetry does: key "nvml:I".
    """
    if not torch.cuda.is_available():
        return {}
    labels = {}
    for index in range(torch.cuda.device_count()):
        address = torch_bus_id(torch.cuda.get_device_properties(index))
        fallback = nvml_index(f"cuda:{index}") if torch.version.hip is None else None
        if address is not None:
            labels[address] = f"cuda:{index}"
        elif fallback is not None:
            labels[f"nvml:{fallback}"] = f"cuda:{index}"
    return labels


@contextlib.contextmanager
def torch_copy_load(device: str) -> Iterator[bool]:
    """Keep host-to-device copies running on `device` while the caller reads the link; yields whether it could."""
    if not device.startswith("cuda:"):
        yield False
        return
    import torch

    stop = threading.Event()
    host = torch.empty(64 * 2**20, dtype=torch.uint8).pin_memory()
    target = torch.empty_like(host, device=device)

    def copy() -> None:
        with torch.cuda.device(device):
            while not stop.is_set():
                target.copy_(host, non_blocking=True)
                torch.cuda.synchronize(device)

    worker = threading.Thread(target=copy, daemon=True)
    worker.start()
    time.sleep(WAKE_S)
    try:
        yield True
    finally:
        stop.set()
        worker.join()


def label_for(gpu: GpuHealth, labels: dict[str, str]) -> str:
    """The torch name of a driver's GPU ("cuda:N"), or the driver's own ("nvml:I", "amdgpu:I") when torch lacks it."""
    driver_name = f"{'nvml' if gpu.vendor == 'NVIDIA' else 'amdgpu'}:{gpu.index}"
    return labels.get(gpu.bus_id or "") or labels.get(driver_name) or driver_name


def plain(value: Any) -> Any:
    """GpuHealth as JSON-ready data: a Missing counter becomes {"missing": why}."""
    if isinstance(value, Missing):
        return {"missing": value.why}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value


def check(
    readers: list[HealthReader],
    absent: list[str],
    labels: dict[str, str],
    asked: str,
    load: Load,
    broken: tuple[str, ...] = (),
) -> Iterator[Event]:
    """Facts and verdicts for the GPUs `asked` names: one cuda:N, or every GPU the drivers see."""
    for why in broken:
        yield Verdict(STAGE, "driver", Status.FAIL, why, {"error": why}, device=asked)
    found = [(reader, gpu) for reader in readers for gpu in reader.devices()]
    if asked.startswith("cuda:"):
        found = [(r, g) for r, g in found if label_for(g, labels) == asked]
    if not found:
        why = "; ".join([*absent, *broken]) or "the drivers list no GPU"
        status = Status.FAIL if asked.startswith("cuda") else Status.SKIP
        yield Verdict(
            STAGE, "gpu", status, f"no GPU health to read for {asked}: {why}", {"absent": absent}, device=asked
        )
        return
    gpus = [{"label": label_for(g, labels)} | {f.name: plain(getattr(g, f.name)) for f in fields(g)} for _, g in found]
    yield Facts(STAGE, {"gpus": gpus})
    for done, (reader, gpu) in enumerate(found):
        label = label_for(gpu, labels)
        yield Progress(STAGE, done, len(found), f"{label} {gpu.name}")
        if "unreachable" in gpu.extra:
            text = f"{label} is listed by the driver but cannot be reached: {gpu.extra['unreachable']}"
            yield Verdict(STAGE, "reachable", Status.FAIL, text, dict(gpu.extra), device=label)
            continue
        link, under_load = gpu.pcie, False
        if isinstance(link, dict) and (link["gen"] < link["max_gen"] or link["width"] < link["max_width"]):
            with load(label) as loaded:
                if loaded:
                    link, under_load = reader.pcie(gpu.index), True
        yield from gpu_verdicts(label, gpu, link, under_load)
    yield Progress(STAGE, len(found), len(found), "done")


def run(context: StageContext) -> Iterator[Event]:
    import torch

    readers, absent, broken = open_readers()
    try:
        yield from check(readers, absent, torch_labels(torch), context.spec.device, torch_copy_load, tuple(broken))
    finally:
        for reader in readers:
            reader.close()
