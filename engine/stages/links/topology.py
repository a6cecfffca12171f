"""How the driver says the GPUs are joined: NVML (by ctypes) on NVIDIA, KFD's sysfs on AMD, drawn as words.

Standard library only. The cells read like `nvidia-smi topo -m`: NV# (that many NVLinks), XGMI, and
for PCIe the nearest common ancestor: PIX (one switch), PXB (several), PHB (host bridge), NODE
(across host bridges in one NUMA node), SYS (across the SMP interconnect).
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

NVML_LEVELS = {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}
NVLINK_MAX_LINKS = 18
NVLINK_REMOTE_UNKNOWN, NVLINK_REMOTE_GPU, NVLINK_REMOTE_SWITCH = -1, 0, 2
KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")
KFD_IOLINK_PCIE, KFD_IOLINK_XGMI = 2, 11


class NvLink(Protocol):
    """The few NVML questions the topology needs; a fake answers them in tests."""

    def count(self) -> int: ...
    def bus_id(self, index: int) -> str | None: ...
    def common_ancestor(self, a: int, b: int) -> int | None: ...
    def nvlinks(self, index: int) -> list[tuple[str | None, int]]: ...  # (remote bus id, remote type) per active link
    def pcie(self, index: int) -> dict[str, int | None]: ...


class _PciInfo(ctypes.Structure):
    _fields_ = [
        ("busIdLegacy", ctypes.c_char * 16),
        ("domain", ctypes.c_uint),
        ("bus", ctypes.c_uint),
        ("device", ctypes.c_uint),
        ("pciDeviceId", ctypes.c_uint),
        ("pciSubSystemId", ctypes.c_uint),
        ("busId", ctypes.c_char * 32),
    ]


def _address(info: _PciInfo) -> str:
    return f"{info.domain:04x}:{info.bus:02x}:{info.device:02x}.0"


def normal_bus_id(text: str | None) -> str | None:
    """'00000000:18:00.0' and '0000:18:00.0' name one device: keep the last four hex digits of the domain."""
    if not text:
        return None
    parts = text.strip().lower().split(":")
    if len(parts) != 3:
        return text.lower()
    return f"{int(parts[0], 16):04x}:{parts[1]}:{parts[2]}"


class CtypesNvml:
    """NVML through ctypes (stage children avoid nvidia-ml-py); every call that fails answers None."""

    def __init__(self, library: str = "libnvidia-ml.so.1") -> None:
        self.lib = ctypes.CDLL(library)
        if self.lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit failed")
        self.handles: list[ctypes.c_void_p] = []
        count = ctypes.c_uint()
        self.lib.nvmlDeviceGetCount_v2(ctypes.byref(count))
        for index in range(count.value):
            handle = ctypes.c_void_p()
            self.lib.nvmlDeviceGetHandleByIndex_v2(index, ctypes.byref(handle))
            self.handles.append(handle)

    def close(self) -> None:
        self.lib.nvmlShutdown()

    def count(self) -> int:
        return len(self.handles)

    def bus_id(self, index: int) -> str | None:
        info = _PciInfo()
        return (
            _address(info) if self.lib.nvmlDeviceGetPciInfo_v3(self.handles[index], ctypes.byref(info)) == 0 else None
        )

    def common_ancestor(self, a: int, b: int) -> int | None:
        level = ctypes.c_int()
        call = self.lib.nvmlDeviceGetTopologyCommonAncestor
        return level.value if call(self.handles[a], self.handles[b], ctypes.byref(level)) == 0 else None

    def nvlinks(self, index: int) -> list[tuple[str | None, int]]:
        links = []
        for link in range(NVLINK_MAX_LINKS):
            active = ctypes.c_int()
            if self.lib.nvmlDeviceGetNvLinkState(self.handles[index], link, ctypes.byref(active)) != 0:
                continue
            if not active.value:
                continue
            info, kind = _PciInfo(), ctypes.c_int(NVLINK_REMOTE_UNKNOWN)
            ok = self.lib.nvmlDeviceGetNvLinkRemotePciInfo_v2(self.handles[index], link, ctypes.byref(info)) == 0
            call = getattr(self.lib, "nvmlDeviceGetNvLinkRemoteDeviceType", None)
            if call is None or call(self.handles[index], link, ctypes.byref(kind)) != 0:
                kind.value = NVLINK_REMOTE_UNKNOWN
            links.append((_address(info) if ok else None, kind.value))
        return links

    def pcie(self, index: int) -> dict[str, int | None]:
        out: dict[str, int | None] = {}
        for key, call in (
            ("gen", "nvmlDeviceGetCurrPcieLinkGeneration"),
            ("width", "nvmlDeviceGetCurrPcieLinkWidth"),
            ("max_gen", "nvmlDeviceGetMaxPcieLinkGeneration"),
            ("max_width", "nvmlDeviceGetMaxPcieLinkWidth"),
        ):
            value = ctypes.c_uint()
            ok = hasattr(self.lib, call) and getattr(self.lib, call)(self.handles[index], ctypes.byref(value)) == 0
            out[key] = value.value if ok else None
        return out


def nvidia_topology(nvml: NvLink, bus_ids: Sequence[str | None]) -> dict[str, Any]:
    """The matrix for torch's GPUs in torch's order (matched to NVML's by PCI bus id), NVLinks counted per pair."""
    nvml_bus = [normal_bus_id(nvml.bus_id(i)) for i in range(nvml.count())]
    wanted = [normal_bus_id(b) for b in bus_ids]
    order = [nvml_bus.index(b) if b in nvml_bus else i for i, b in enumerate(wanted)]
    links = [nvml.nvlinks(n) for n in order]
    # Links into an NVSwitch fabric join every pair on it; where the driver does not say what is at the far
    # end, a far end that is no GPU NVML lists is taken for the switch.
    to_switch = [
        sum(
            1
            for bus, kind in lk
            if kind == NVLINK_REMOTE_SWITCH or (kind == NVLINK_REMOTE_UNKNOWN and normal_bus_id(bus) not in nvml_bus)
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
            direct = sum(1 for remote, _ in links[i] if normal_bus_id(remote) == wanted[j])
            nv = direct + min(to_switch[i], to_switch[j])
            level = nvml.common_ancestor(a, b)
            row.append(f"NV{nv}" if nv else NVML_LEVELS.get(level, "?") if level is not None else "?")
        cells.append(row)
    gpus = [
        {"bus_id": wanted[i], "nvml_index": n, "nvlinks_active": len(links[i]), "pcie": nvml.pcie(n)}
        for i, n in enumerate(order)
    ]
    return {"source": "NVML", "cells": cells, "gpus": gpus}


def _properties(path: Path) -> dict[str, int]:
    out = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[key] = int(value)
    return out


def amd_topology(bus_ids: Sequence[str | None], root: Path = KFD_NODES) -> dict[str, Any] | None:
    """xGMI and PCIe links between GPUs from KFD's topology in sysfs, or None where there is none."""
    try:
        nodes = sorted((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    except OSError:
        return None
    by_bus: dict[str, int] = {}
    for node in nodes:
        try:
            props = _properties(node / "properties")
        except OSError:
            continue
        if props.get("simd_count", 0) and "location_id" in props:
            loc = props["location_id"]
            by_bus[f"{props.get('domain', 0):04x}:{loc >> 8:02x}:{(loc & 0xFF) >> 3:02x}.0"] = int(node.name)
    wanted = [normal_bus_id(b) for b in bus_ids]
    if not all(b in by_bus for b in wanted):
        return None
    kinds: dict[tuple[int, int], tuple[int, int]] = {}
    for node in nodes:
        for link in sorted((node / "io_links").glob("*/properties")):
            props = _properties(link)
            kinds[(props.get("node_from", int(node.name)), props.get("node_to", -1))] = (
                props.get("type", 0),
                props.get("weight", 0),
            )
    cells = []
    for i, a in enumerate(wanted):
        row = []
        for j, b in enumerate(wanted):
            kind, _weight = kinds.get((by_bus[a], by_bus[b]), (None, 0)) if i != j else (None, 0)
            row.append(
                "X" if i == j else "XGMI" if kind == KFD_IOLINK_XGMI else "PCIE" if kind == KFD_IOLINK_PCIE else "?"
            )
        cells.append(row)
    return {"source": "KFD sysfs", "cells": cells, "gpus": [{"bus_id": b, "kfd_node": by_bus[b]} for b in wanted]}


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
    try:
        nvml = CtypesNvml()
    except (OSError, AttributeError) as error:
        return {"source": None, "reason": f"NVML not usable: {error}"}
    try:
        return nvidia_topology(nvml, bus_ids)
    finally:
        nvml.close()
