"""What a health reader reports about one GPU, the same shape for every vendor; absent counters say why."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Missing:
    """A counter the driver does not offer, with the reason in words."""

    why: str


@dataclass(frozen=True)
class GpuHealth:
    """One GPU's counters. Each field is a value, or Missing saying why it could not be read."""

    index: int  # the driver's own index (NVML or the sysfs card order)
    name: str
    vendor: str
    bus_id: str | None  # "0000:18:00.0", to join with torch's devices
    ecc_enabled: bool | Missing = Missing("not read")
    ecc: dict[str, int] | Missing = Missing("not read")  # volatile/aggregate x corrected/uncorrected
    retired_pages: dict[str, int] | Missing = Missing("not read")  # retired, pending (, failed on AMD)
    row_remap: dict[str, int] | Missing = Missing("not read")  # correctable, uncorrectable, pending, failure
    xid: dict[str, Any] | Missing = Missing("not read")  # codes seen in the kernel log
    pcie: dict[str, int] | Missing = Missing("not read")  # gen, max_gen, width, max_width (, gpu_max_gen)
    persistence: bool | Missing = Missing("not read")
    power: dict[str, float] | Missing = Missing("not read")  # limit_w, default_w, min_w, max_w
    idle_clocks: dict[str, Any] | Missing = Missing("not read")  # reasons, utilization_pct
    partition: dict[str, Any] | Missing = Missing("not read")  # MIG, or AMD compute partition
    fabric: dict[str, Any] | Missing = Missing("not read")  # NVSwitch fabric registration
    extra: dict[str, Any] = field(default_factory=dict)


class HealthReader(Protocol):
    """One vendor's way of reading GPU health; `pcie` re-reads the link alone, e.g. under load."""

    vendor: str

    def devices(self) -> list[GpuHealth]: ...

    def pcie(self, index: int) -> dict[str, int] | Missing: ...

    def close(self) -> None: ...
