"""What the amdgpu driver reports through sysfs: VRAM carve-out, GTT pool and which one is the real memory.

On an APU the BIOS carve-out (often 512 MiB) is VRAM in name only; the GPU really draws on the
GTT pool in system memory, so that is the figure to report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

AMD_VENDOR = "0x1002"
APU_CARVEOUT_MAX = 8 * 1024**3


def _read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def amd_cards(drm_root: Path = Path("/sys/class/drm")) -> list[dict[str, Any]]:
    """Each amdgpu card's PCI address and memory pools, as the driver reports them."""
    cards = []
    for card in sorted(drm_root.glob("card[0-9]*")):
        if "-" in card.name:
            continue  # connectors such as card0-DP-1
        device = card / "device"
        try:
            vendor = (device / "vendor").read_text().strip()
        except OSError:
            continue
        if vendor != AMD_VENDOR:
            continue
        cards.append(
            {
                "card": card.name,
                "pci": device.resolve().name,
                "vram_total": _read_int(device / "mem_info_vram_total"),
                "gtt_total": _read_int(device / "mem_info_gtt_total"),
                "vram_used": _read_int(device / "mem_info_vram_used"),
                "gtt_used": _read_int(device / "mem_info_gtt_used"),
            }
        )
    return cards


def memory_pool(card: dict[str, Any], integrated: bool | None) -> dict[str, Any]:
    """Which pool is the GPU's real memory: GTT on an APU, VRAM on a discrete card."""
    vram, gtt = card.get("vram_total") or 0, card.get("gtt_total") or 0
    apu = integrated if integrated is not None else (vram <= APU_CARVEOUT_MAX and gtt > vram)
    if apu:
        return {
            "pool_bytes": max(vram, gtt),
            "pool_source": "GTT (shared system memory)",
            "note": f"integrated GPU: the {vram / 2**20:.0f} MiB VRAM carve-out is not its memory",
        }
    return {"pool_bytes": vram, "pool_source": "VRAM", "note": ""}


def amdgpu_module_version(path: Path = Path("/sys/module/amdgpu/version")) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def rocm_version(path: Path = Path("/opt/rocm/.info/version")) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None
