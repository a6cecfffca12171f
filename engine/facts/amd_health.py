"""AMD GPU health from amdgpu's sysfs: RAS error counts, bad pages, PCIe link, power cap, compute partition.

The drm root is injectable, so tests read a fake tree.
"""

from __future__ import annotations

import re
from pathlib import Path

from rigcheck.engine.facts.health_model import GpuHealth, Missing
from rigcheck.engine.hw.amdgpu import DRM_ROOT, amdgpu_cards
from rigcheck.engine.hw.pci import link_speed_gt_s, normalise_bus_id
from rigcheck.engine.hw.sysfs import read_int, read_text

GT_PER_GEN = {2.5: 1, 5.0: 2, 8.0: 3, 16.0: 4, 32.0: 5, 64.0: 6}


def link_gen(text: str | None) -> int | None:
    """'16.0 GT/s PCIe' -> 4; None for 'Unknown' or an absent file."""
    speed = link_speed_gt_s(text)
    return GT_PER_GEN.get(speed) if speed is not None else None


def ras_counts(ras: Path) -> dict[str, dict[str, int]]:
    """{block: {"ue": n, "ce": n}} from ras/*_err_count ("ue: 0\\nce: 0")."""
    blocks = {}
    for path in sorted(ras.glob("*_err_count")):
        pairs = dict(re.findall(r"(ue|ce):\s*(\d+)", read_text(path) or ""))
        if pairs:
            blocks[path.name.removesuffix("_err_count")] = {k: int(v) for k, v in pairs.items()}
    return blocks


def bad_pages(text: str) -> dict[str, int]:
    """Counts of retired (R), pending (P) and failed (F) pages from ras/gpu_vram_bad_pages."""
    flags = [line.rsplit(":", 1)[-1].strip() for line in text.splitlines() if line.count(":") >= 2]
    return {"retired": flags.count("R"), "pending": flags.count("P"), "failed": flags.count("F")}


class AmdHealthReader:
    vendor = "AMD"

    def __init__(self, drm_root: Path = DRM_ROOT) -> None:
        self.cards: list[Path] = [card.device for card in amdgpu_cards(drm_root)]
        if not self.cards:
            raise RuntimeError(f"no amdgpu card under {drm_root}")

    def devices(self) -> list[GpuHealth]:
        return [self._read(index, device) for index, device in enumerate(self.cards)]

    def _read(self, index: int, device: Path) -> GpuHealth:
        ras = device / "ras"
        has_ras = ras.is_dir()
        no_ras = Missing("this card has no RAS (consumer cards have none), so the driver counts no memory errors")
        return GpuHealth(
            index=index,
            name=read_text(device / "product_name") or f"AMD GPU ({device.resolve().name})",
            vendor=self.vendor,
            bus_id=normalise_bus_id(device.resolve().name),
            ecc_enabled=True if has_ras else no_ras,
            ecc=self._ecc(ras) if has_ras else no_ras,
            retired_pages=self._pages(ras) if has_ras else no_ras,
            row_remap=Missing("amdgpu retires bad pages instead of remapping rows (see retired pages)"),
            xid=Missing("XIDs are the NVIDIA driver's; amdgpu reports memory faults through RAS"),
            pcie=self.pcie(index),
            persistence=Missing("amdgpu has no persistence mode: the driver stays loaded"),
            power=self._power(device),
            idle_clocks=Missing("amdgpu reports throttling only in the binary gpu_metrics table, not read here"),
            partition=self._partition(device),
            fabric=Missing("NVSwitch fabric state is NVIDIA's; XGMI links are not read here"),
        )

    def _ecc(self, ras: Path) -> dict[str, int] | Missing:
        blocks = ras_counts(ras)
        if not blocks:
            return Missing("the RAS folder has no *_err_count files")
        return {
            "volatile_corrected": sum(b.get("ce", 0) for b in blocks.values()),
            "volatile_uncorrected": sum(b.get("ue", 0) for b in blocks.values()),
            **{f"block_{name}_{kind}": n for name, counts in blocks.items() for kind, n in counts.items()},
        }

    def _pages(self, ras: Path) -> dict[str, int] | Missing:
        text = read_text(ras / "gpu_vram_bad_pages")
        if text is None:
            return Missing("the driver does not list bad pages (no ras/gpu_vram_bad_pages)")
        return bad_pages(text)

    def pcie(self, index: int) -> dict[str, int] | Missing:
        device = self.cards[index]
        gen, max_gen = (
            link_gen(read_text(device / "current_link_speed")),
            link_gen(read_text(device / "max_link_speed")),
        )
        width, max_width = read_int(device / "current_link_width"), read_int(device / "max_link_width")
        if None in (gen, max_gen, width, max_width):
            return Missing("the driver does not report this GPU's PCIe link (an integrated GPU has none)")
        return {"gen": gen, "max_gen": max_gen, "width": width, "max_width": max_width}  # type: ignore[dict-item]

    def _power(self, device: Path) -> dict[str, float] | Missing:
        hwmon = next(iter(sorted(device.glob("hwmon/hwmon*"))), None)
        cap = read_int(hwmon / "power1_cap") if hwmon else None
        if hwmon is None or cap is None:
            return Missing("the driver offers no power cap for this GPU (no hwmon power1_cap)")
        out = {"limit_w": cap / 1e6}
        for key, name in (
            ("default_w", "power1_cap_default"),
            ("max_w", "power1_cap_max"),
            ("min_w", "power1_cap_min"),
        ):
            value = read_int(hwmon / name)
            if value is not None:
                out[key] = value / 1e6
        return out

    def _partition(self, device: Path) -> dict[str, str] | Missing:
        current = read_text(device / "current_compute_partition")
        if current is None:
            return Missing("this GPU has no compute partitions")
        return {"kind": "compute partition", "current": current, "whole": "SPX"}

    def close(self) -> None:
        pass
