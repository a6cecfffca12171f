"""PCI addresses in one spelling ("0000:1b:00.0"), whatever wrote them, and each device's link from sysfs."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from rigcheck.engine.hw.sysfs import read_int, read_text

PCI_DEVICES = Path("/sys/bus/pci/devices")
# [domain:]bus:device.function; NVML writes an 8-digit domain, torch and sysfs 4, some tools none.
_BUS_ID = re.compile(r"^(?:([0-9a-f]{1,8}):)?([0-9a-f]{1,2}):([0-9a-f]{1,2})\.([0-7])$")
_GT_S = re.compile(r"\s*([\d.]+)\s*GT/s")


def normalise_bus_id(text: str | bytes | None) -> str | None:
    """A PCI address as "0000:1b:00.0" (lower case, 4-digit domain), or None where it is not one."""
    if text is None:
        return None
    if isinstance(text, bytes):
        text = text.decode("ascii", "replace")
    match = _BUS_ID.match(text.strip().strip("\x00").lower())
    if match is None:
        return None
    domain, bus, device, function = match.groups()
    return f"{int(domain or '0', 16):04x}:{int(bus, 16):02x}:{int(device, 16):02x}.{function}"


def bus_id_from_parts(domain: int, bus: int, device: int, function: int = 0) -> str:
    """The address from its numbers (torch's device properties, NVML's PCI info); a GPU is function 0."""
    return f"{domain:04x}:{bus:02x}:{device:02x}.{function}"


def torch_bus_id(props: Any) -> str | None:
    """torch's device properties (pci_domain_id, pci_bus_id, pci_device_id) as an address, or None
    where this torch does not report them."""
    bus = getattr(props, "pci_bus_id", None)
    if bus is None:
        return None
    return bus_id_from_parts(getattr(props, "pci_domain_id", 0), bus, getattr(props, "pci_device_id", 0))


def link_speed_gt_s(text: str | None) -> float | None:
    """'16.0 GT/s PCIe' -> 16.0; None for 'Unknown' or an absent file."""
    match = _GT_S.match(text or "")
    return float(match.group(1)) if match else None


def sysfs_max_link(address: str, root: Path = PCI_DEVICES) -> tuple[float, int] | None:
    """(GT/s, lanes) of the device's top link as sysfs states it, or None where it says nothing."""
    folder = root / address
    speed, width = link_speed_gt_s(read_text(folder / "max_link_speed")), read_int(folder / "max_link_width")
    if speed is None or width is None:
        return None
    return speed, width
