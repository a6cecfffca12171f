"""CPU package power from the RAPL energy counters in powercap sysfs: the host's own power reading.

Intel and, on recent kernels, AMD both show `intel-rapl:N` zones named "package-N" whose energy_uj
counts micro-joules and wraps at max_energy_range_uj. Power is the counter's rise over the time
between two readings.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rigcheck.engine.hw.sysfs import read_int, read_text

POWERCAP = Path("/sys/class/powercap")


@dataclass
class _Zone:
    energy: Path
    wrap: int | None  # max_energy_range_uj: the counter goes back to 0 past this
    last: tuple[int, float] | None = None  # (energy uJ, clock s) at the previous reading


class RaplPower:
    """`read()` gives the package power in W over the time since the previous call, summed over the
    CPU sockets; None on the first call and where the counters cannot be read (often root-only)."""

    def __init__(self, root: Path = POWERCAP, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.zones: list[_Zone] = []
        for zone in sorted(root.glob("intel-rapl:*")):
            if zone.name.count(":") != 1:
                continue  # a sub-zone (core, uncore, dram): already inside its package
            name = read_text(zone / "name")
            if name is not None and name.startswith("package"):
                self.zones.append(_Zone(zone / "energy_uj", read_int(zone / "max_energy_range_uj")))

    def read(self) -> float | None:
        now = self.clock()
        total, known = 0.0, 0
        for zone in self.zones:
            energy = read_int(zone.energy)
            if energy is None:
                zone.last = None
                continue
            last, zone.last = zone.last, (energy, now)
            if last is None or now <= last[1]:
                continue
            rise = energy - last[0]
            if rise < 0:  # the counter wrapped between the two readings
                if not zone.wrap:
                    continue
                rise += zone.wrap
            total += rise / 1e6 / (now - last[1])
            known += 1
        return total if known and known == len(self.zones) else None
