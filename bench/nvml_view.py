"""What NVML shows of cuda:0's users from where this runs (inside or outside a PID namespace): each listed pid and
whether this namespace resolves it, device memory used (v2) against the listed processes' sum, utilization, power
and per-process SM samples. Run it inside `unshare --pid --fork --mount-proc` to see what a container sees."""

from __future__ import annotations

import os
import sys
import time

from rigcheck.engine.hw.nvml import Nvml, ok, open_nvml


def main() -> int:
    nvml = open_nvml()
    if not isinstance(nvml, Nvml):
        print(f"NVML not usable: {nvml.text}")
        return 1
    handle = nvml.handle(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
    listed = {}
    for kind, answer in (("compute", nvml.compute_processes(handle)), ("graphics", nvml.graphics_processes(handle))):
        for proc in ok(answer) or []:
            listed[proc.pid] = proc.used_gpu_memory
            here = os.path.exists(f"/proc/{proc.pid}")
            memory = "?" if proc.used_gpu_memory is None else f"{proc.used_gpu_memory / 2**20:.0f} MiB"
            print(f"  {kind} pid {proc.pid}: {memory}, {'resolves here' if here else 'NOT in this PID namespace'}")
    memory = ok(nvml.memory_v2(handle))
    known = sum(m or 0 for m in listed.values())
    if memory is not None:
        print(f"  memory used (v2) {memory.used / 2**20:.0f} MiB; listed processes {known / 2**20:.0f} MiB; "
              f"unlisted {(memory.used - known) / 2**20:.0f} MiB")  # fmt: skip
    util, power = ok(nvml.utilization(handle)), ok(nvml.power_usage(handle))
    print(f"  utilization {getattr(util, 'gpu', None)}%, power {None if power is None else power / 1000:.0f} W")
    samples = nvml.process_utilization(handle, int((time.time() - 1.0) * 1e6))
    print(f"  per-process SM over the last second: {samples}")
    nvml.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
