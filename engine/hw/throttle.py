"""What each clock-event (throttle) reason means, in one table: every module that sorts reasons reads it here.

The reasons are NVML's words (hw/nvml_types.py `CLOCK_EVENT_REASONS`). Each is one of four classes:
- benign: the driver's own bookkeeping or the user's setting (idle, application clocks, sync boost, display clocks);
- power cap: the board at its power limit: the normal state of a heavy load at the default limit;
- thermal: the clocks held back by heat (the software or the hardware thermal limit);
- hardware: a signal from the board or the chassis (a hardware slowdown, a power brake from the supply or the BMC).
A reason this table does not know is none of them: callers say it as it is.
"""

from __future__ import annotations

from collections.abc import Iterable

BENIGN = "benign"
POWER_CAP = "power cap"
THERMAL = "thermal"
HARDWARE = "hardware"

CLASS_OF = {
    "idle": BENIGN,
    "application clock setting": BENIGN,
    "sync boost": BENIGN,
    "display clock setting": BENIGN,
    "power cap": POWER_CAP,
    "software thermal slowdown": THERMAL,
    "hardware thermal slowdown": THERMAL,
    "hardware slowdown": HARDWARE,
    "power brake": HARDWARE,
}


def of_class(*classes: str) -> frozenset[str]:
    """The reasons of these classes."""
    return frozenset(reason for reason, found in CLASS_OF.items() if found in classes)


BENIGN_REASONS = of_class(BENIGN)
SOFT_REASONS = of_class(BENIGN, POWER_CAP)  # never a fault by themselves: a busy GPU at its power cap is normal
THERMAL_REASONS = of_class(THERMAL)
POWER_FAULTS = of_class(HARDWARE)  # the board or chassis held the clocks back, not the heat
SLOWDOWN_REASONS = of_class(THERMAL, HARDWARE)  # clocks held back beyond what the load itself asks
# signalled by the board's own hardware (its thermal sensor included): a health check never passes these
HARDWARE_SIGNALS = POWER_FAULTS | {"hardware thermal slowdown"}


def classes(reasons: Iterable[str]) -> set[str]:
    """The classes of these reasons (an unknown reason adds none)."""
    return {CLASS_OF[r] for r in reasons if r in CLASS_OF}
