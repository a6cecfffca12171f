"""The GPUs this host has, by name and PCI device id, read without torch (NVML, then amdgpu's sysfs): what
`rigcheck references` lists the table for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rigcheck.engine.hw.amdgpu import DRM_ROOT, amdgpu_cards
from rigcheck.engine.hw.nvml import NvmlFailure, NvmlUnavailable, ok, open_nvml
from rigcheck.engine.hw.pci import PCI_DEVICES, normalise_bus_id
from rigcheck.engine.hw.sysfs import read_text


@dataclass(frozen=True)
class PresentGpu:
    name: str
    bus_id: str | None
    pci_id: str | None  # "0x2335"


def _pci_id(address: str | None, root: Path) -> str | None:
    return read_text(root / address / "device") if address else None


def present_gpus(
    library: str | None = None, drm_root: Path | None = None, pci_root: Path | None = None
) -> list[PresentGpu]:
    """Every NVIDIA GPU NVML lists, then every amdgpu card; empty where there is neither."""
    found: list[PresentGpu] = []
    drm_root, pci_root = drm_root or DRM_ROOT, pci_root or PCI_DEVICES
    nvml = open_nvml(library)
    if not isinstance(nvml, NvmlUnavailable):
        try:
            for index in range(ok(nvml.count()) or 0):
                handle = nvml.handle(index)
                if isinstance(handle, NvmlFailure):
                    continue
                pci = nvml.pci_info(handle)
                address = normalise_bus_id(pci.bus_id) if not isinstance(pci, NvmlFailure) else None
                found.append(PresentGpu(ok(nvml.name(handle)) or "NVIDIA GPU", address, _pci_id(address, pci_root)))
        finally:
            nvml.close()
    for card in amdgpu_cards(drm_root):
        name = read_text(card.device / "product_name") or f"AMD GPU {card.card}"
        found.append(PresentGpu(name, card.pci, read_text(card.device / "device")))
    return found
