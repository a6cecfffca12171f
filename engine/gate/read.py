"""One pass over the node's GPUs for the gate: the health readers' counters plus identity, versions and processes.

Everything here is read, never loaded: no CUDA context, no torch. A driver that cannot be read is named in
`unknown`, so the gate says UNKNOWN rather than OK.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rigcheck.engine.facts.amd_health import AmdHealthReader
from rigcheck.engine.facts.health_model import GpuHealth, HealthReader, Missing
from rigcheck.engine.facts.nvidia_health import NvidiaHealthReader, NvmlBroken
from rigcheck.engine.gate.kmsg import KernelLog, read_kernel_log
from rigcheck.engine.hw.amdgpu import DRM_ROOT, amdgpu_module_version
from rigcheck.engine.hw.nvml import NvmlFailure
from rigcheck.engine.hw.pci import PCI_DEVICES
from rigcheck.engine.hw.sysfs import read_text

PCI_ROOT = PCI_DEVICES
PROC = Path("/proc")  # a pid not here belongs to another PID namespace (another container)
NVIDIA_VENDOR = "0x10de"
DISPLAY_CLASSES = ("0x0300", "0x0302")  # VGA and 3D controllers: GPUs, not NVSwitches or audio functions


@dataclass(frozen=True)
class GateGpu:
    """One GPU as the gate sees it: the health counters and what only the gate reads."""

    label: str  # "nvml:0", "amdgpu:1": the driver's own index (the gate has no torch to name cuda:N)
    health: GpuHealth
    uuid: str | None
    vbios: str | Missing
    processes: list[dict[str, Any]] | Missing  # pid, used_bytes and seen (its pid is in this namespace) of each
    unlisted: int | None = None  # device memory in use beyond every listed process's own (None: not known)


@dataclass
class NodeReading:
    gpus: list[GateGpu] = field(default_factory=list)
    driver: dict[str, str] = field(default_factory=dict)  # vendor -> driver version
    unknown: list[str] = field(default_factory=list)  # what could not be read at all: never an OK
    absent: list[str] = field(default_factory=list)  # drivers not on this node, in words
    kernel_log: KernelLog | Missing = field(default_factory=lambda: Missing("not read"))
    pci_gpus: int = 0  # NVIDIA GPUs on the PCI bus, whatever the driver says


def pci_nvidia_gpus(root: Path = PCI_ROOT) -> int:
    """NVIDIA display-class functions on the PCI bus: a GPU the driver lost still shows here."""
    try:
        entries = list(root.iterdir())
    except OSError:
        return 0
    return sum(
        1
        for device in entries
        if read_text(device / "vendor") == NVIDIA_VENDOR and (read_text(device / "class") or "")[:6] in DISPLAY_CLASSES
    )


def _users(nv: Any, handle: Any, own: int) -> tuple[list[dict[str, Any]] | Missing, int | None]:
    """Every process on this GPU other than rigcheck (compute and graphics, once each), whether this PID namespace
    can see it, and the memory in use that no listed process accounts for (as the run's unseen evidence reads it)."""
    found = nv.compute_processes(handle)
    if isinstance(found, NvmlFailure):
        return Missing(f"NVML could not list processes: {found}"), None
    graphics = nv.graphics_processes(handle)
    listed = {p.pid: p for p in [*found, *([] if isinstance(graphics, NvmlFailure) else graphics)]}
    memory = nv.memory_v2(handle)  # v2's `used` leaves out the driver's reservation
    unlisted = None
    if not isinstance(memory, NvmlFailure) and all(p.used_gpu_memory is not None for p in listed.values()):
        unlisted = max(0, int(memory.used) - sum(int(p.used_gpu_memory or 0) for p in listed.values()))
    return [
        {"pid": pid, "used_bytes": p.used_gpu_memory, "seen": (PROC / str(pid)).exists()}
        for pid, p in sorted(listed.items())
        if pid != own
    ], unlisted


def _nvidia(reading: NodeReading, kernel: KernelLog | Missing) -> None:
    lines: list[str] | Missing = kernel.lines if isinstance(kernel, KernelLog) else kernel
    try:
        reader = NvidiaHealthReader(kernel_log=lambda: lines)
    except OSError as error:
        reading.absent.append("no NVML library" if "cannot open" in str(error) else f"NVML not usable ({error})")
        if reading.pci_gpus:
            reading.unknown.append(f"{reading.pci_gpus} NVIDIA GPU(s) on the PCI bus but no NVML library")
        return
    except NvmlBroken as error:
        reading.unknown.append(f"NVML fails to start: {error}")
        return
    try:
        nv = reader.nvml
        version = nv.driver_version()
        if not isinstance(version, NvmlFailure):
            reading.driver["NVIDIA"] = version
        own = os.getpid()
        for gpu in reader.devices():
            handle = reader.handles[gpu.index]
            if isinstance(handle, NvmlFailure):
                reading.gpus.append(GateGpu(f"nvml:{gpu.index}", gpu, None, Missing(str(handle)), Missing(str(handle))))
                continue
            uuid = nv.uuid(handle)
            vbios = nv.vbios_version(handle)
            processes, unlisted = _users(nv, handle, own)
            reading.gpus.append(
                GateGpu(
                    f"nvml:{gpu.index}",
                    gpu,
                    None if isinstance(uuid, NvmlFailure) else uuid,
                    Missing(f"NVML could not read the VBIOS version: {vbios}")
                    if isinstance(vbios, NvmlFailure)
                    else vbios,
                    processes,
                    unlisted,
                )
            )
    finally:
        reader.close()


def _amd(reading: NodeReading, drm_root: Path) -> None:
    try:
        reader: HealthReader = AmdHealthReader(drm_root)
    except RuntimeError as error:
        reading.absent.append(str(error))
        return
    version = amdgpu_module_version()
    if version:
        reading.driver["AMD"] = version
    cards = reader.cards  # type: ignore[attr-defined]
    for gpu in reader.devices():
        device = cards[gpu.index]
        vbios = read_text(device / "vbios_version")
        reading.gpus.append(
            GateGpu(
                f"amdgpu:{gpu.index}",
                gpu,
                read_text(device / "unique_id"),
                vbios if vbios else Missing("amdgpu does not report a VBIOS version here"),
                Missing("processes per GPU are read through NVML only"),
            )
        )


def read_node(kernel_log: Path | None = None, drm_root: Path = DRM_ROOT, pci_root: Path = PCI_ROOT) -> NodeReading:
    """Every GPU's counters on this node, with what could not be read named."""
    reading = NodeReading(pci_gpus=pci_nvidia_gpus(pci_root))
    reading.kernel_log = read_kernel_log(kernel_log)
    _nvidia(reading, reading.kernel_log)
    _amd(reading, drm_root)
    if not reading.gpus and not reading.unknown:  # nothing was checked: a gate that saw no GPU cannot say OK
        reading.unknown.append(no_gpu_found(reading))
    return reading


def no_gpu_found(reading: NodeReading) -> str:
    """Why a node with no GPU could not be checked (unless it was asked to have none: `--expect-gpus 0`)."""
    return f"no GPU found ({'; '.join(reading.absent) or 'the driver lists none'})"
