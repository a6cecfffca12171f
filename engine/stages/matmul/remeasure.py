"""A best-of figure that would FAIL is measured once more, after a bounded wait for its GPU to go idle: a figure
disturbed by someone else's load must never fail the hardware (the parent makes the verdict INCONCLUSIVE when the
second figure is disturbed too).

The wait reads the GPU's utilization through NVML while this child has no work queued: the driver sees every user
of the device, even one in another PID namespace. Standard library and rigcheck's NVML binding only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rigcheck.engine.hw import nvml
from rigcheck.engine.hw.pci import normalise_bus_id

WAIT_S = 30.0  # the longest wait for the GPU to go idle before measuring again
IDLE_PCT = 10  # utilization at or below this, while this child has nothing queued, is idle
IDLE_READS = 3  # consecutive idle reads needed
POLL_S = 0.5
NO_READING_PAUSE_S = 2.0  # where the driver gives no utilization, a short pause is all there is


@dataclass(frozen=True)
class Waited:
    seconds: float
    idle: bool | None  # None: the utilization could not be read
    last_busy_pct: int | None


def wait_for_idle(bus_id: str | None, limit_s: float = WAIT_S) -> Waited:
    """Wait for the GPU at `bus_id` to read idle, through NVML (opened and closed here)."""
    started = nvml.open_nvml()
    if not isinstance(started, nvml.Nvml):
        return wait_idle(None, limit_s)
    try:
        return wait_idle(utilization_reader(started, bus_id), limit_s)
    finally:
        started.close()


def utilization_reader(started: nvml.Nvml, bus_id: str | None) -> Callable[[], int | None] | None:
    """A function reading the GPU's utilization (%), found by PCI bus id; None where NVML cannot read it."""
    if bus_id is None:
        return None
    for index in range(nvml.ok(started.count()) or 0):
        handle = nvml.ok(started.handle(index))
        info = nvml.ok(started.pci_info(handle)) if handle is not None else None
        if handle is not None and info is not None and normalise_bus_id(info.bus_id) == normalise_bus_id(bus_id):

            def read(handle: nvml.Handle = handle) -> int | None:
                found = nvml.ok(started.utilization(handle))
                return None if found is None else found.gpu

            return read
    return None


def wait_idle(
    read: Callable[[], int | None] | None,
    limit_s: float = WAIT_S,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Waited:
    """Wait until the GPU reads idle IDLE_READS times in a row, or `limit_s` passes."""
    start = clock()
    if read is None:
        sleep(NO_READING_PAUSE_S)
        return Waited(clock() - start, None, None)
    quiet, last_busy = 0, None
    while True:
        value = read()
        if value is None:
            sleep(NO_READING_PAUSE_S)
            return Waited(clock() - start, None, last_busy)
        quiet = quiet + 1 if value <= IDLE_PCT else 0
        if value > IDLE_PCT:
            last_busy = value
        if quiet >= IDLE_READS:
            return Waited(clock() - start, True, last_busy)
        if clock() - start >= limit_s:
            return Waited(clock() - start, False, last_busy)
        sleep(POLL_S)


def waited_words(waited: Waited) -> str:
    if waited.idle is None:
        return f"measured again after a {waited.seconds:.1f} s pause (the GPU's utilization could not be read)"
    if waited.idle:
        return f"measured again once the GPU was idle, after waiting {waited.seconds:.1f} s"
    return (
        f"measured again after waiting {waited.seconds:.1f} s: the GPU was still busy without rigcheck "
        f"({waited.last_busy_pct}%)"
    )
