"""What the amdgpu driver reports through sysfs: VRAM carve-out, GTT pool and which one is the real memory.

On an APU the BIOS carve-out (often 512 MiB) is VRAM in name only; the GPU really draws on the
GTT pool in system memory, so that is the figure to report.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rigcheck.engine.hw.amdgpu import DRM_ROOT, amdgpu_cards
from rigcheck.engine.hw.sysfs import read_int, read_text

APU_CARVEOUT_MAX = 8 * 1024**3
ROCM_VERSION = Path("/opt/rocm/.info/version")


def amd_cards(drm_root: Path = DRM_ROOT) -> list[dict[str, Any]]:
    """Each amdgpu card's PCI address and memory pools, as the driver reports them."""
    return [
        {
            "card": card.card,
            "pci": card.pci,
            "vram_total": read_int(card.device / "mem_info_vram_total"),
            "gtt_total": read_int(card.device / "mem_info_gtt_total"),
            "vram_used": read_int(card.device / "mem_info_vram_used"),
            "gtt_used": read_int(card.device / "mem_info_gtt_used"),
        }
        for card in amdgpu_cards(drm_root)
    ]


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


def rocm_version(path: Path = ROCM_VERSION) -> str | None:
    return read_text(path)
