"""Look-alikes for the health readers: an NVML that reports chosen faults, and an amdgpu sysfs tree with RAS."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fakes import FakeNvml
from rigcheck.engine.hw.nvml import NOT_SUPPORTED, FabricInfo, NvmlFailure, PciInfo, Utilization

H200_CLEAN: dict[str, Any] = {
    "ecc_mode": 1,
    "ecc": {(0, 0): 0, (1, 0): 0, (0, 1): 3, (1, 1): 0},  # (error type, counter) -> count
    "remap": (0, 0, 0, 0),
    "link": (5, 16),
    "max_link": (5, 16),
    "gpu_max_gen": 5,
    "power_mw": (700_000, 700_000, 200_000, 700_000),  # limit, default, min, max
    "enforced_mw": 700_000,
    "reasons": 0x1,  # idle
    "utilization": 0,
    "persistence": 1,
    "mig": (0, 0),
    "fabric_state": 0,  # not on an NVSwitch fabric
    "fabric_status": 0,
    "missing": ("nvmlDeviceGetRetiredPages",),  # Hopper remaps rows instead of retiring pages
}


class FakeHealthNvml(FakeNvml):
    """One H200 whose counters are H200_CLEAN overridden by keyword; `missing` calls answer Not Supported.

    `link_when_loaded` is the PCIe link reported once `loaded` is set (an idle GPU lowers its link).
    """

    def __init__(self, link_when_loaded: tuple[int, int] | None = None, **overrides: Any) -> None:
        super().__init__()
        self.state = H200_CLEAN | overrides
        self.link_when_loaded = link_when_loaded
        self.loaded = False

    def _has(self, name: str, value: Any) -> Any:
        return NvmlFailure(NOT_SUPPORTED, "Not Supported") if name in self.state["missing"] else value

    def pci_info(self, handle: str) -> PciInfo:
        return PciInfo("00000000:18:00.0", 0, 0x18, 0)

    def ecc_mode(self, handle: str) -> Any:
        return self._has("nvmlDeviceGetEccMode", (self.state["ecc_mode"], self.state["ecc_mode"]))

    def total_ecc_errors(self, handle: str, error_type: int, counter: int) -> Any:
        return self._has("nvmlDeviceGetTotalEccErrors", self.state["ecc"][(error_type, counter)])

    def retired_page_count(self, handle: str, cause: int) -> Any:
        return self._has("nvmlDeviceGetRetiredPages", self.state.get("retired", 0))

    def retired_pages_pending(self, handle: str) -> Any:
        return self._has("nvmlDeviceGetRetiredPages", self.state.get("retired_pending", 0))

    def remapped_rows(self, handle: str) -> Any:
        return self._has("nvmlDeviceGetRemappedRows", self.state["remap"])

    def _link(self) -> tuple[int, int]:
        return self.link_when_loaded if self.loaded and self.link_when_loaded else self.state["link"]

    def pcie_generation(self, handle: str) -> Any:
        return self._has("pcie", self._link()[0])

    def pcie_width(self, handle: str) -> Any:
        return self._has("pcie", self._link()[1])

    def pcie_max_generation(self, handle: str) -> Any:
        return self._has("pcie", self.state["max_link"][0])

    def pcie_max_width(self, handle: str) -> Any:
        return self._has("pcie", self.state["max_link"][1])

    def pcie_gpu_max_generation(self, handle: str) -> int:
        return self.state["gpu_max_gen"]

    def persistence_mode(self, handle: str) -> Any:
        return self._has("nvmlDeviceGetPersistenceMode", self.state["persistence"])

    def power_limit(self, handle: str) -> Any:
        return self._has("power", self.state["power_mw"][0])

    def default_power_limit(self, handle: str) -> Any:
        return self._has("nvmlDeviceGetPowerManagementDefaultLimit", self.state["power_mw"][1])

    def power_limit_range(self, handle: str) -> tuple[int, int]:
        return tuple(self.state["power_mw"][2:])  # type: ignore[return-value]

    def enforced_power_limit(self, handle: str) -> int:
        return self.state["enforced_mw"]

    def clock_event_reasons(self, handle: str) -> Any:
        return self._has("nvmlDeviceGetCurrentClocksEventReasons", self.state["reasons"])

    def utilization(self, handle: str) -> Utilization:
        return Utilization(gpu=self.state["utilization"], memory=0)

    def mig_mode(self, handle: str) -> Any:
        return self._has("nvmlDeviceGetMigMode", tuple(self.state["mig"]))

    def fabric(self, handle: str) -> FabricInfo:
        return FabricInfo(state=self.state["fabric_state"], status=self.state["fabric_status"])


def amd_health_tree(root: Path, ras: dict[str, str] | None = None, **files: str) -> Path:
    """A fake /sys/class/drm with one MI300-like card; `ras` maps ras/ file names to their text (None: no RAS)."""
    device = root / "devices" / "0000:c1:00.0"
    hwmon = device / "hwmon" / "hwmon2"
    hwmon.mkdir(parents=True)
    texts = {
        "vendor": "0x1002",
        "product_name": "AMD Instinct MI300X",
        "current_link_speed": "32.0 GT/s PCIe",
        "max_link_speed": "32.0 GT/s PCIe",
        "current_link_width": "16",
        "max_link_width": "16",
        "current_compute_partition": "SPX",
        "hwmon/hwmon2/power1_cap": "750000000",
        "hwmon/hwmon2/power1_cap_default": "750000000",
        "hwmon/hwmon2/power1_cap_max": "750000000",
    } | {k.replace("__", "/"): v for k, v in files.items()}
    for name, text in texts.items():
        if text:
            (device / name).write_text(text + "\n")
    if ras is not None:
        (device / "ras").mkdir()
        for name, text in ras.items():
            (device / "ras" / name).write_text(text)
    drm = root / "drm"
    (drm / "card0").mkdir(parents=True)
    (drm / "card0" / "device").symlink_to(device)
    return drm
