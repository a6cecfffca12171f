"""amdgpu's KFD topology (/sys/class/kfd/kfd/topology/nodes): each GPU node's gfx target, compute units, top engine
and memory clocks and memory bus width, by PCI bus id. Never raises; a tree with no GPU node gives nothing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rigcheck.engine.hw.sysfs import read_text

KFD_NODES = Path("/sys/class/kfd/kfd/topology/nodes")


@dataclass(frozen=True)
class KfdGpu:
    gfx: str  # "gfx942"
    compute_units: int
    sclk_max_mhz: int | None
    mclk_max_mhz: int | None
    bus_bits: int | None


def _properties(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in (read_text(path) or "").splitlines():
        key, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[key] = int(value)
    return out


def gfx_target(version: int) -> str:
    """KFD's gfx_target_version (90402, 110501) as a gfx target (gfx942, gfx1151)."""
    return f"gfx{version // 10000}{(version // 100) % 100:x}{version % 100:x}" if version else ""


def kfd_gpus(nodes: Path = KFD_NODES) -> dict[str, KfdGpu]:
    """By PCI bus id ("0000:1b:00.0"), every GPU node (CPU nodes have no SIMDs)."""
    found: dict[str, KfdGpu] = {}
    for node in sorted(nodes.glob("[0-9]*")) if nodes.is_dir() else []:
        p = _properties(node / "properties")
        if not p.get("simd_count") or not p.get("simd_per_cu"):
            continue
        location = p.get("location_id", 0)
        bus = f"{p.get('domain', 0):04x}:{location >> 8:02x}:{(location >> 3) & 0x1F:02x}.{location & 0x7}"
        memory = _properties(node / "mem_banks" / "0" / "properties")
        found[bus] = KfdGpu(
            gfx_target(p.get("gfx_target_version", 0)),
            p["simd_count"] // p["simd_per_cu"],
            p.get("max_engine_clk_fcompute") or None,
            memory.get("mem_clk_max") or None,
            memory.get("width") or None,
        )
    return found
