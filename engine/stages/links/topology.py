"""How the driver says the GPUs are joined: NVML on NVIDIA, KFD's sysfs on AMD (both through hw/), drawn as words.

Standard library only. The cells read like `nvidia-smi topo -m`: NV# (that many NVLinks), XGMI, and
for PCIe the nearest common ancestor: PIX (one switch), PXB (several), PHB (host bridge), NODE
(across host bridges in one NUMA node), SYS (across the SMP interconnect).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from rigcheck.engine.hw.amdgpu import KFD_NODES, kfd_topology
from rigcheck.engine.hw.nvml import Handle, Nvml, NvmlFailure, NvmlUnavailable, PciInfo, ok, open_nvml
from rigcheck.engine.hw.pci import bus_id_from_parts, normalise_bus_id

NVML_LEVELS = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
NVLINK_MAX_LINKS = 18
NVLINK_REMOTE_UNKNOWN, NVLINK_REMOTE_GPU, NVLINK_REMOTE_SWITCH = -1, 0, 2
KFD_IOLINK_PCIE, KFD_IOLINK_XGMI = 2, 11


class NvLink(Protocol):
    """The few NVML questions the topology needs; a fake answers them in tests."""

    def count(self) -> int: ...
    def bus_id(self, index: int) -> str | None: ...
    def common_ancestor(self, a: int, b: int) -> int | None: ...
    def nvlinks(self, index: int) -> list[tuple[str | None, int]]: ...  # (remote bus id, remote type) per active link
    def pcie(self, index: int) -> dict[str, int | None]: ...


def _address(info: PciInfo | NvmlFailure) -> str | None:
    return None if isinstance(info, NvmlFailure) else bus_id_from_parts(info.domain, info.bus, info.device)


class NvmlLinks:
    """The NvLink questions answered by hw.nvml; a GPU NVML cannot reach answers None to each."""

    def __init__(self, nvml: Nvml) -> None:
        self.nvml = nvml
        count = ok(nvml.count()) or 0
        self.handles: list[Handle | None] = [ok(nvml.handle(index)) for index in range(count)]

    def close(self) -> None:
        self.nvml.close()

    def count(self) -> int:
        return len(self.handles)

    def bus_id(self, index: int) -> str | None:
        handle = self.handles[index]
        return _address(self.nvml.pci_info(handle)) if handle is not None else None

    def common_ancestor(self, a: int, b: int) -> int | None:
        first, second = self.handles[a], self.handles[b]
        return ok(self.nvml.common_ancestor(first, second)) if first is not None and second is not None else None

    def nvlinks(self, index: int) -> list[tuple[str | None, int]]:
        handle = self.handles[index]
        if handle is None:
            return []
        links = []
        for link in range(NVLINK_MAX_LINKS):
            if not ok(self.nvml.nvlink_active(handle, link)):
                continue
            kind = ok(self.nvml.nvlink_remote_type(handle, link))
            remote = _address(self.nvml.nvlink_remote_pci(handle, link))
            links.append((remote, NVLINK_REMOTE_UNKNOWN if kind is None else kind))
        return links

    def pcie(self, index: int) -> dict[str, int | None]:
        handle = self.handles[index]
        nv = self.nvml
        calls = (
            ("gen", nv.pcie_generation),
            ("width", nv.pcie_width),
            ("max_gen", nv.pcie_max_generation),
            ("max_width", nv.pcie_max_width),
        )
        return {key: ok(call(handle)) if handle is not None else None for key, call in calls}


def nvidia_topology(nvml: NvLink, bus_ids: Sequence[str | None]) -> dict[str, Any]:
    """The matrix for torch's GPUs in torch's order (matched to NVML's by PCI bus id), NVLinks counted per pair."""
    nvml_bus = [normalise_bus_id(nvml.bus_id(i)) for i in range(nvml.count())]
    wanted = [normalise_bus_id(b) for b in bus_ids]
    order = [nvml_bus.index(b) if b in nvml_bus else i for i, b in enumerate(wanted)]
    links = [nvml.nvlinks(n) for n in order]
    # Links into an NVSwitch fabric join every pair on it; where the driver does not say what is at the far
    # end, a far end that is no GPU NVML lists is taken for the switch.
    to_switch = [
        sum(
            1
            for bus, kind in lk
            if kind == NVLINK_REMOTE_SWITCH or (kind == NVLINK_REMOTE_UNKNOWN and normalise_bus_id(bus) not in nvml_bus)
        )
        for lk in links
    ]
    cells: list[list[str]] = []
    for i, a in enumerate(order):
        row = []
        for j, b in enumerate(order):
            if i == j:
                row.append("X")
                continue
            direct = sum(1 for remote, _ in links[i] if normalise_bus_id(remote) == wanted[j])
            nv = direct + min(to_switch[i], to_switch[j])
            level = nvml.common_ancestor(a, b)
            row.append(f"NV{nv}" if nv else NVML_LEVELS.get(level, "?") if level is not None else "?")
        cells.append(row)
    gpus = [
        {"bus_id": wanted[i], "nvml_index": n, "nvlinks_active": len(links[i]), "pcie": nvml.pcie(n)}
        for i, n in enumerate(order)
    ]
    return {"source": "NVML", "cells": cells, "gpus": gpus}


def amd_topology(bus_ids: Sequence[str | None], root: Path = KFD_NODES) -> dict[str, Any] | None:
    """xGMI and PCIe links between GPUs from KFD's topology in sysfs, or None where there is none."""
    found = kfd_topology(root)
    if found is None:
        return None
    by_bus, kinds = found.gpus, found.links
    wanted = [normalise_bus_id(b) for b in bus_ids]
    if not all(b in by_bus for b in wanted):
        return None
    cells = []
    for i, a in enumerate(wanted):
        row = []
        for j, b in enumerate(wanted):
            link = kinds.get((by_bus[a], by_bus[b])) if i != j and a is not None and b is not None else None
            kind = link[0] if link is not None else None
            row.append(
                "X" if i == j else "XGMI" if kind == KFD_IOLINK_XGMI else "PCIE" if kind == KFD_IOLINK_PCIE else "?"
            )
        cells.append(row)
    nodes = [{"bus_id": b, "kfd_node": by_bus[b]} for b in wanted if b is not None]  # all of them: checked above
    return {"source": "KFD sysfs", "cells": cells, "gpus": nodes}


def render(labels: Sequence[str], cells: Sequence[Sequence[str]]) -> str:
    """A square table with a header row, like `nvidia-smi topo -m`; cells may be words or numbers."""
    width = max(len(x) for x in [*labels, *(c for row in cells for c in row), ""]) + 2
    lines = [" " * width + "".join(label.rjust(width) for label in labels)]
    lines += [
        label.ljust(width) + "".join(c.rjust(width) for c in row) for label, row in zip(labels, cells, strict=True)
    ]
    return "\n".join(line.rstrip() for line in lines)


def read_topology(bus_ids: Sequence[str | None], hip: bool) -> dict[str, Any]:
    """The driver's topology for these GPUs, or {'source': None, 'reason': ...} when it cannot be read."""
    if hip:
        found = amd_topology(bus_ids)
        return found or {"source": None, "reason": "no KFD topology in sysfs for these GPUs"}
    nvml = open_nvml()
    if isinstance(nvml, NvmlUnavailable):
        return {"source": None, "reason": f"NVML not usable: {'nvmlInit failed' if nvml.loaded else nvml.text}"}
    links = NvmlLinks(nvml)
    try:
        return nvidia_topology(links, bus_ids)
    finally:
        links.close()
