"""amdgpu readings straight from sysfs and hwmon, for hosts without pyamdgpuinfo; root path injectable."""

from __future__ import annotations

import re
from pathlib import Path

from rigcheck.engine.hw.amdgpu import DRM_ROOT, amdgpu_cards
from rigcheck.engine.hw.pci import normalise_bus_id
from rigcheck.engine.hw.sysfs import read_float, read_text
from rigcheck.engine.telemetry.sample import GpuSample


def parse_dpm(text: str) -> tuple[float | None, float | None]:
    """(current, max) MHz from pp_dpm_sclk, whose current level is marked with '*'."""
    levels = [(float(mhz), "*" in line) for line in text.splitlines() for mhz in re.findall(r"(\d+)\s*Mhz", line, re.I)]
    if not levels:
        return None, None
    current = next((mhz for mhz, active in levels if active), None)
    return current, max(mhz for mhz, _ in levels)


class AmdSysfsSource:
    vendor = "AMD"

    def __init__(self, drm_root: Path = DRM_ROOT) -> None:
        found = amdgpu_cards(drm_root)
        if not found:
            raise RuntimeError("no amdgpu card in sysfs")
        self.cards = [card.device for card in found]
        self.addresses = [card.pci for card in found]

    def read(self) -> list[GpuSample]:
        out = []
        for index, device in enumerate(self.cards):
            address = self.addresses[index]
            hwmon = next(iter(sorted(device.glob("hwmon/hwmon*"))), device)
            current, top = parse_dpm(read_text(device / "pp_dpm_sclk") or "")
            freq = read_float(hwmon / "freq1_input")
            power = read_float(hwmon / "power1_average")
            if power is None:
                power = read_float(hwmon / "power1_input")
            temp = read_float(hwmon / "temp1_input")
            cap = read_float(hwmon / "power1_cap")
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
                    utilization_pct=read_float(device / "gpu_busy_percent"),
                    memory_used=_int(read_float(device / "mem_info_vram_used")),
                    memory_total=_int(read_float(device / "mem_info_vram_total")),
                    gtt_used=_int(read_float(device / "mem_info_gtt_used")),
                    gtt_total=_int(read_float(device / "mem_info_gtt_total")),
                    pci_bus_id=normalise_bus_id(address),
                )
            )
        return out

    def close(self) -> None:
        pass


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)
