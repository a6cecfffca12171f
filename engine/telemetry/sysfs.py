"""amdgpu readings straight from sysfs and hwmon, for hosts without pyamdgpuinfo; root path injectable."""

from __future__ import annotations

import re
from pathlib import Path

from rigcheck.engine.facts.amd_driver import AMD_VENDOR
from rigcheck.engine.telemetry.sample import GpuSample, normalise_bus_id


def _num(path: Path) -> float | None:
    try:
        return float(path.read_text().strip())
    except (OSError, ValueError):
        return None


def parse_dpm(text: str) -> tuple[float | None, float | None]:
    """(current, max) MHz from pp_dpm_sclk, whose current level is marked with '*'."""
    levels = [(float(mhz), "*" in line) for line in text.splitlines() for mhz in re.findall(r"(\d+)\s*Mhz", line, re.I)]
    if not levels:
        return None, None
    current = next((mhz for mhz, active in levels if active), None)
    return current, max(mhz for mhz, _ in levels)


class AmdSysfsSource:
    vendor = "AMD"

    def __init__(self, drm_root: Path = Path("/sys/class/drm")) -> None:
        self.cards = []
        for card in sorted(drm_root.glob("card[0-9]*")):
            device = card / "device"
            if "-" in card.name:
                continue
            try:
                if (device / "vendor").read_text().strip() == AMD_VENDOR:
                    self.cards.append(device)
            except OSError:
                continue
        if not self.cards:
            raise RuntimeError("no amdgpu card in sysfs")
        self.addresses = [device.resolve().name for device in self.cards]  # cardN/device links to the PCI folder

    def read(self) -> list[GpuSample]:
        out = []
        for index, device in enumerate(self.cards):
            address = self.addresses[index]
            hwmon = next(iter(sorted(device.glob("hwmon/hwmon*"))), device)
            try:
                current, top = parse_dpm((device / "pp_dpm_sclk").read_text())
            except OSError:
                current, top = None, None
            freq = _num(hwmon / "freq1_input")
            power = _num(hwmon / "power1_average")
            if power is None:
                power = _num(hwmon / "power1_input")
            temp = _num(hwmon / "temp1_input")
            cap = _num(hwmon / "power1_cap")
            out.append(
                GpuSample(
                    index=index,
                    name=f"AMD GPU ({address})",
                    vendor=self.vendor,
                    source="sysfs",
                    sm_clock_mhz=freq / 1e6 if freq is not None else current,
                    max_sm_clock_mhz=top,
                    temperature_c=temp / 1000 if temp is not None else None,
                    power_w=power / 1e6 if power is not None else None,
                    power_limit_w=cap / 1e6 if cap else None,
                    utilization_pct=_num(device / "gpu_busy_percent"),
                    memory_used=_int(_num(device / "mem_info_vram_used")),
                    memory_total=_int(_num(device / "mem_info_vram_total")),
                    gtt_used=_int(_num(device / "mem_info_gtt_used")),
                    gtt_total=_int(_num(device / "mem_info_gtt_total")),
                    pci_bus_id=normalise_bus_id(address),
                )
            )
        return out

    def close(self) -> None:
        pass


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)
