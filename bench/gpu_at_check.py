"""On a GPU machine: hw.gpu_at finds each GPU by its PCI address through the driver's own by-address call
(nvmlDeviceGetHandleByPciBusId_v2), agrees with a scan of every index, and answers None for an address with no GPU.

Run: `source bench/devpath.sh && python3 bench/gpu_at_check.py` (no torch needed). Prints one line per GPU and exits
non-zero on any disagreement.
"""

from __future__ import annotations

import sys
import time

from rigcheck.engine.hw.gpu_at import gpu_at
from rigcheck.engine.hw.nvml import Nvml, NvmlFailure, open_nvml
from rigcheck.engine.hw.pci import normalise_bus_id


def main() -> int:
    nvml = open_nvml()
    if not isinstance(nvml, Nvml):
        print(f"NVML unavailable: {nvml}")
        return 2
    bad = 0
    try:
        count = nvml.count()
        for index in range(0 if isinstance(count, NvmlFailure) else count):
            handle = nvml.handle(index)
            pci = nvml.pci_info(handle) if not isinstance(handle, NvmlFailure) else handle
            if isinstance(pci, NvmlFailure):
                print(f"GPU {index}: no PCI info ({pci})")
                continue
            address = normalise_bus_id(pci.bus_id)
            direct = nvml.handle_by_bus_id(address or "")
            start = time.perf_counter()
            found = gpu_at(nvml, pci.bus_id)
            took_us = (time.perf_counter() - start) * 1e6
            uuid_index, uuid_found = nvml.uuid(handle), nvml.uuid(found) if found is not None else None
            same = uuid_index == uuid_found
            bad += not same
            how = "by bus id" if not isinstance(direct, NvmlFailure) else f"by scan ({direct})"
            print(f"GPU {index} at {address}: {how}, {took_us:.0f} us, same device as the index: {same}")
        missing = gpu_at(nvml, "0000:ff:1f.7")
        print(f"an address with no GPU: {missing!r} (expected None)")
        bad += missing is not None
    finally:
        nvml.close()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
