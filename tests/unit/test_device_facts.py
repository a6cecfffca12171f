"""Each GPU figure carries what its GPU is made of (architecture, SMs, maximum clocks, bus width) for the parent to
derive its peaks: torch's properties joined with a fake NVML's H200 by PCI bus id; a device NVML cannot place keeps
torch's facts alone, and a CPU figure carries none."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from rigcheck.engine.measure.arch_peaks import Peak, compute_peak, memory_peak, props_of
from rigcheck.engine.stages.common import device_facts as facts


@pytest.fixture
def fake_h200(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes import build_fake_nvml
    from rigcheck.engine.hw import nvml

    monkeypatch.setattr(nvml, "LIBRARY", str(build_fake_nvml(tmp_path)))
    facts._facts.cache_clear()


def props(bus: int) -> SimpleNamespace:
    return SimpleNamespace(
        name="NVIDIA H200", major=9, minor=0, multi_processor_count=132, pci_bus_id=bus, pci_domain_id=0,
        pci_device_id=0,
    )  # fmt: skip


def test_a_figure_carries_its_gpu_s_units_clocks_and_bus(fake_h200: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props(0x18 if index == 0 else 0x77))
    stamped = facts.device_facts(torch.device("cuda:0"))
    assert stamped == {
        "gpu_name": "NVIDIA H200", "gpu_arch": "sm_90", "gpu_units": 132, "sm_clock_max_mhz": 1980,
        "mem_clock_max_mhz": 3201, "memory_bus_bits": 6144,
    }  # fmt: skip
    derived = props_of(stamped)
    assert derived is not None
    bf16, memory = compute_peak(derived, "bf16"), memory_peak(derived)
    assert isinstance(bf16, Peak) and round(bf16.value, 1) == 989.4
    assert isinstance(memory, Peak) and abs(memory.value / 4800 - 1) < 0.03
    # a GPU NVML does not list at that address: torch's facts only, and the parent says what it could not derive
    alone = facts.device_facts(torch.device("cuda:1"))
    assert alone["gpu_arch"] == "sm_90" and "sm_clock_max_mhz" not in alone
    assert facts.device_facts(torch.device("cpu")) == {}
