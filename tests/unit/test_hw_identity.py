"""hw/ owns a GPU's identity and the meaning of its throttle reasons: one NVML lookup by PCI bus id with one answer
(None) for a GPU NVML cannot place, and one table that classes every reason NVML reports."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from fakes import build_fake_nvml
from rigcheck.engine.hw import throttle
from rigcheck.engine.hw.gpu_at import gpu_at
from rigcheck.engine.hw.nvml import FUNCTION_NOT_FOUND, Nvml, NvmlFailure, open_nvml
from rigcheck.engine.hw.nvml_types import CLOCK_EVENT_REASONS


@dataclass
class Pci:
    bus_id: str


class StubNvml:
    """Three GPUs; the middle one's PCI info fails; `by_bus_id` False: a driver without the by-address call."""

    def __init__(self, by_bus_id: bool) -> None:
        self.by_bus_id = by_bus_id
        self.addresses = ["00000000:18:00.0", None, "00000000:3B:00.0"]

    def handle_by_bus_id(self, address: str) -> object:
        if not self.by_bus_id:
            return NvmlFailure(FUNCTION_NOT_FOUND, "not in this driver")
        for index, known in enumerate(self.addresses):
            if known is not None and known.lower().endswith(address[-7:]):
                return f"gpu{index}"
        return NvmlFailure(13, "not found")

    def count(self) -> int:
        return len(self.addresses)

    def handle(self, index: int) -> object:
        return f"gpu{index}"

    def pci_info(self, handle: str) -> object:
        known = self.addresses[int(handle[3:])]
        return Pci(known) if known is not None else NvmlFailure(999, "unknown error")


@pytest.mark.parametrize("by_bus_id", [True, False], ids=["by bus id", "by scanning"])
def test_the_gpu_at_an_address_is_found_in_any_spelling(by_bus_id: bool) -> None:
    nvml = StubNvml(by_bus_id)
    for spelling in ("0000:3b:00.0", "00000000:3B:00.0", "3b:00.0"):
        assert gpu_at(nvml, spelling) == "gpu2"  # type: ignore[arg-type]
    assert gpu_at(nvml, "0000:18:00.0") == "gpu0"  # type: ignore[arg-type]


@pytest.mark.parametrize("by_bus_id", [True, False], ids=["by bus id", "by scanning"])
def test_a_gpu_nvml_cannot_place_is_none(by_bus_id: bool) -> None:
    nvml = StubNvml(by_bus_id)
    assert gpu_at(nvml, "0000:65:00.0") is None  # type: ignore[arg-type]
    assert gpu_at(nvml, "not an address") is None and gpu_at(nvml, None) is None  # type: ignore[arg-type]


def test_the_lookup_through_a_real_library(tmp_path: Path) -> None:
    """The fake NVML library (tests/fake_nvml_lib.c) answers the by-address call through ctypes as the driver does."""
    nvml = open_nvml(str(build_fake_nvml(tmp_path)))
    assert isinstance(nvml, Nvml)
    try:
        for address in ("0000:18:00.0", "0000:3b:00.0"):
            handle = gpu_at(nvml, address)
            assert handle is not None
            info = nvml.pci_info(handle)
            assert not isinstance(info, NvmlFailure) and info.bus_id.lower().endswith(address[-7:])
        assert gpu_at(nvml, "0000:99:00.0") is None
    finally:
        nvml.close()


def test_every_reason_nvml_reports_has_one_class() -> None:
    assert set(CLOCK_EVENT_REASONS.values()) == set(throttle.CLASS_OF)
    assert throttle.SLOWDOWN_REASONS == throttle.THERMAL_REASONS | throttle.POWER_FAULTS
    assert "power cap" in throttle.SOFT_REASONS and not throttle.SOFT_REASONS & throttle.SLOWDOWN_REASONS
    assert {"hardware slowdown", "hardware thermal slowdown", "power brake"} == throttle.HARDWARE_SIGNALS
    assert throttle.classes(["power cap", "idle", "a word from later"]) == {throttle.POWER_CAP, throttle.BENIGN}
