"""AMD readings through pyamdgpuinfo (sclk in Hz, power in W, load 0-1), normalised to MHz and %."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.hw.pci import normalise_bus_id
from rigcheck.engine.telemetry.safe import safe
from rigcheck.engine.telemetry.sample import GpuSample


class AmdGpuInfoSource:
    """Reads every amdgpu device; `module` is pyamdgpuinfo, or a fake with the same calls."""

    vendor = "AMD"

    def __init__(self, module: Any = None) -> None:
        if module is None:
            import pyamdgpuinfo

            module = pyamdgpuinfo
        count = module.detect_gpus()  # FileNotFoundError without /dev/dri: the factory moves on
        if not count:
            raise RuntimeError("pyamdgpuinfo found no AMD GPU")
        self.gpus = [module.get_gpu(i) for i in range(count)]
        self.max_sclk = []
        for gpu in self.gpus:
            clocks = safe(gpu.query_max_clocks) or {}
            sclk = clocks.get("sclk_max") if isinstance(clocks, dict) else None
            self.max_sclk.append(sclk / 1e6 if sclk else None)

    def read(self) -> list[GpuSample]:
        out = []
        for index, gpu in enumerate(self.gpus):
            info = getattr(gpu, "memory_info", {}) or {}
            load = safe(gpu.query_load)
            out.append(
                GpuSample(
                    index=index,
                    name=str(getattr(gpu, "name", None) or "AMD GPU"),
                    vendor=self.vendor,
                    source="pyamdgpuinfo",
                    sm_clock_mhz=safe(gpu.query_sclk, scale=1e-6),
                    mem_clock_mhz=safe(gpu.query_mclk, scale=1e-6),
                    max_sm_clock_mhz=self.max_sclk[index],
                    temperature_c=safe(gpu.query_temperature),
                    power_w=safe(gpu.query_power),
                    utilization_pct=None if load is None else load * 100.0,
                    memory_used=safe(gpu.query_vram_usage),
                    memory_total=info.get("vram_size"),
                    gtt_used=safe(gpu.query_gtt_usage),
                    gtt_total=info.get("gtt_size"),
                    # pyamdgpuinfo names the PCI slot in some versions; where it does not, None
                    pci_bus_id=normalise_bus_id(getattr(gpu, "pci_slot", None)),
                )
            )
        return out

    def close(self) -> None:
        pass
