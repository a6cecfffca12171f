"""Look-alikes for the health readers: an NVML that reports chosen faults, and an amdgpu sysfs tree with RAS."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from fakes import FakeNvml
from rigcheck.engine.facts.nvml_ctypes import NOT_SUPPORTED, NvmlError

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
    "fabric_state": 0,
    "missing": ("nvmlDeviceGetRetiredPages",),  # Hopper remaps rows instead of retiring pages
}


class FakeHealthNvml(FakeNvml):
    """One H200 whose counters are H200_CLEAN overridden by keyword; `missing` calls raise Not Supported.

    `link_when_loaded` is the PCIe link reported once `loaded` is set (an idle GPU lowers its link).
    """

    def __init__(self, link_when_loaded: tuple[int, int] | None = None, **overrides: Any) -> None:
        super().__init__()
        self.state = H200_CLEAN | overrides
        self.link_when_loaded = link_when_loaded
        self.loaded = False

    def _has(self, name: str) -> None:
        if name in self.state["missing"]:
            raise NvmlError(NOT_SUPPORTED, "Not Supported")

    def nvmlDeviceGetPciInfo(self, handle: str) -> SimpleNamespace:
        return SimpleNamespace(busId="00000000:18:00.0")

    def nvmlDeviceGetEccMode(self, handle: str) -> list[int]:
        self._has("nvmlDeviceGetEccMode")
        return [self.state["ecc_mode"], self.state["ecc_mode"]]

    def nvmlDeviceGetTotalEccErrors(self, handle: str, error_type: int, counter: int) -> int:
        self._has("nvmlDeviceGetTotalEccErrors")
        return self.state["ecc"][(error_type, counter)]

    def nvmlDeviceGetRetiredPages(self, handle: str, cause: int) -> list[int]:
        self._has("nvmlDeviceGetRetiredPages")
        return [0] * self.state.get("retired", 0)

    def nvmlDeviceGetRetiredPagesPendingStatus(self, handle: str) -> int:
        self._has("nvmlDeviceGetRetiredPages")
        return self.state.get("retired_pending", 0)

    def nvmlDeviceGetRemappedRows(self, handle: str) -> tuple[int, int, int, int]:
        self._has("nvmlDeviceGetRemappedRows")
        return self.state["remap"]

    def _link(self) -> tuple[int, int]:
        self._has("pcie")
        return self.link_when_loaded if self.loaded and self.link_when_loaded else self.state["link"]

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: str) -> int:
        return self._link()[0]

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: str) -> int:
        return self._link()[1]

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: str) -> int:
        self._has("pcie")
        return self.state["max_link"][0]

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: str) -> int:
        self._has("pcie")
        return self.state["max_link"][1]

    def nvmlDeviceGetGpuMaxPcieLinkGeneration(self, handle: str) -> int:
        return self.state["gpu_max_gen"]

    def nvmlDeviceGetPersistenceMode(self, handle: str) -> int:
        self._has("nvmlDeviceGetPersistenceMode")
        return self.state["persistence"]

    def nvmlDeviceGetPowerManagementLimit(self, handle: str) -> int:
        self._has("power")
        return self.state["power_mw"][0]

    def nvmlDeviceGetPowerManagementDefaultLimit(self, handle: str) -> int:
        self._has("nvmlDeviceGetPowerManagementDefaultLimit")
        return self.state["power_mw"][1]

    def nvmlDeviceGetPowerManagementLimitConstraints(self, handle: str) -> list[int]:
        return list(self.state["power_mw"][2:])

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: str) -> int:
        return self.state["enforced_mw"]

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> int:
        self._has("nvmlDeviceGetCurrentClocksEventReasons")
        return self.state["reasons"]

    def nvmlDeviceGetUtilizationRates(self, handle: str) -> SimpleNamespace:
        return SimpleNamespace(gpu=self.state["utilization"], memory=0)

    def nvmlDeviceGetMigMode(self, handle: str) -> list[int]:
        self._has("nvmlDeviceGetMigMode")
        return list(self.state["mig"])

    def nvmlDeviceGetGpuFabricInfo(self, handle: str) -> SimpleNamespace:
        return SimpleNamespace(state=self.state["fabric_state"], status=0)


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
