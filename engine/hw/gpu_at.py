"""Which NVML device sits at a PCI address: the one lookup of a GPU's identity by bus id, for every reader.

One answer for a GPU NVML cannot place: None. The caller then has no reading and no bound for it (it never takes
another GPU's). NVML is asked by the address itself (`nvmlDeviceGetHandleByPciBusId_v2`, as nvitop does); where
that call fails (a driver without it, one that spells addresses its own way), each device's PCI info is read in
turn, and a device whose info fails is passed over.
"""

from __future__ import annotations

from rigcheck.engine.hw.nvml import Nvml, NvmlFailure, ok
from rigcheck.engine.hw.nvml_health import Handle
from rigcheck.engine.hw.pci import normalise_bus_id


def gpu_at(nvml: Nvml, address: str | None) -> Handle | None:
    """The handle of the GPU at `address` (any spelling of a PCI address), or None where NVML cannot place it."""
    wanted = normalise_bus_id(address)
    if wanted is None:
        return None
    found = nvml.handle_by_bus_id(wanted)
    if not isinstance(found, NvmlFailure):
        return found
    for index in range(ok(nvml.count()) or 0):
        handle = nvml.handle(index)
        if isinstance(handle, NvmlFailure):
            continue  # a GPU NVML cannot read is passed over: it is never taken for this one
        pci = nvml.pci_info(handle)
        if not isinstance(pci, NvmlFailure) and normalise_bus_id(pci.bus_id) == wanted:
            return handle
    return None
