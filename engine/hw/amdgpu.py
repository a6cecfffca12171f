"""amdgpu as sysfs shows it: the cards under drm (each one's device folder and PCI address) and KFD's
topology nodes; the roots are injectable so tests read fake trees."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rigcheck.engine.hw.pci import bus_id_from_parts
from rigcheck.engine.hw.sysfs import read_text

AMD_VENDOR = "0x1002"
DRM_ROOT = Path("/sys/class/drm")
KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")
AMDGPU_VERSION = Path("/sys/module/amdgpu/version")


@dataclass(frozen=True)
class AmdCard:
    """One amdgpu card: `device` is cardN/device, a link to the card's PCI folder named by its address."""

    card: str  # "card0"
    device: Path
    pci: str  # the PCI folder's name, "0000:c1:00.0"


def amdgpu_cards(drm_root: Path = DRM_ROOT) -> list[AmdCard]:
    """Every amdgpu card in drm's order (card0, card1, card10, ...), connectors such as card0-DP-1 left out."""
    cards = []
    for card in sorted(drm_root.glob("card[0-9]*")):
        if "-" in card.name:
            continue
        device = card / "device"
        if read_text(device / "vendor") == AMD_VENDOR:
            cards.append(AmdCard(card.name, device, device.resolve().name))
    return cards


def amdgpu_module_version(path: Path = AMDGPU_VERSION) -> str | None:
    return read_text(path)


@dataclass(frozen=True)
class KfdTopology:
    """KFD's GPU nodes by PCI address, and each io link's (type, weight) by (node from, node to)."""

    gpus: dict[str, int]
    links: dict[tuple[int, int], tuple[int, int]]


def _properties(path: Path) -> dict[str, int]:
    out = {}
    for line in path.read_text().splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[key] = int(value)
    return out


def kfd_topology(root: Path = KFD_NODES) -> KfdTopology | None:
    """The GPU nodes (those with SIMDs) and io links KFD lists, or None where there is no KFD topology."""
    try:
        nodes = sorted((p for p in root.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    except OSError:
        return None
    gpus: dict[str, int] = {}
    for node in nodes:
        try:
            props = _properties(node / "properties")
        except OSError:
            continue
        if props.get("simd_count", 0) and "location_id" in props:
            loc = props["location_id"]
            gpus[bus_id_from_parts(props.get("domain", 0), loc >> 8, (loc & 0xFF) >> 3)] = int(node.name)
    links: dict[tuple[int, int], tuple[int, int]] = {}
    for node in nodes:
        for link in sorted((node / "io_links").glob("*/properties")):
            props = _properties(link)
            links[(props.get("node_from", int(node.name)), props.get("node_to", -1))] = (
                props.get("type", 0),
                props.get("weight", 0),
            )
    return KfdTopology(gpus, links)
