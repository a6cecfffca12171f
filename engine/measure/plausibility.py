"""Physical limits a figure cannot exceed, and the sentence that rejects one that does.

Standard library only: the stage children compute limits with it, and the parent checks figures
against the limit a child reported without importing torch.
"""

from __future__ import annotations

from dataclasses import dataclass

# A measured figure may exceed its computed limit by this much before it is called impossible: the
# limits are already generous (datasheet boost-clock peaks, every logical CPU at its top frequency),
# so anything past them is a broken timer or a wrong byte or FLOP count, never a fast machine.
LIMIT_MARGIN = 0.10

# PCIe transfer rate per lane and direction, GB/s, after line encoding, by GT/s.
PCIE_LANE_GBS = {2.5: 0.25, 5.0: 0.5, 8.0: 0.985, 16.0: 1.969, 32.0: 3.938, 64.0: 7.563}
PCIE_GEN_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}

# Dense matrix FLOPs per clock per core, generous (both FMA pipes busy every cycle).
CPU_FP32_FLOP_PER_CYCLE = (("avx512f", 64), ("fma", 32), ("avx2", 32))
CPU_FP32_DEFAULT = 16  # SSE: two 128-bit FMA pipes
CPU_FP32_ARM = 32  # Arm's flags are not x86's: four 128-bit FMA pipes (Neoverse V2, Grace), generously
CPU_BF16_FLOP_PER_CYCLE = (("amx_bf16", 2048), ("avx512_bf16", 128))


@dataclass(frozen=True)
class Limit:
    """The most a figure can physically be, in the figure's own unit, and how it was found."""

    value: float
    basis: str

    def as_params(self) -> dict[str, object]:
        return {"limit": self.value, "limit_basis": self.basis}


def over_limit(value: float, unit: str, limit: float | None, basis: str, margin: float = LIMIT_MARGIN) -> str | None:
    """The reason a figure is impossible, or None when it is within its limit (or none is known)."""
    if not limit or value <= limit * (1.0 + margin):
        return None
    ratio = value / limit
    return f"impossible: {value:,.4g} {unit} is {ratio:.3g}x the limit of {limit:,.4g} ({basis}): the timer is broken"


def pcie_limit(gen: int | None, gts: float | None, width: int | None, where: str) -> Limit | None:
    """One direction of a PCIe link at its top generation and width."""
    rate = gts or PCIE_GEN_GTS.get(gen or 0)
    if not rate or not width:
        return None
    per_lane = PCIE_LANE_GBS.get(rate) or max(v for k, v in PCIE_LANE_GBS.items() if k <= rate)
    label = f"Gen{gen}" if gen else f"{rate:g} GT/s"
    return Limit(per_lane * width, f"PCIe {label} x{width}, one direction ({where})")


def cpu_matmul_limit(
    logical_cpus: int | None, max_mhz: float | None, flags: list[str], dtype: str, machine: str = "x86_64"
) -> Limit | None:
    """Every logical CPU at its top frequency doing its widest FMAs every cycle, in GFLOP/s."""
    if not logical_cpus or not max_mhz:
        return None
    fp32 = next((n for flag, n in CPU_FP32_FLOP_PER_CYCLE if flag in flags), CPU_FP32_DEFAULT)
    if machine == "aarch64":
        fp32 = max(fp32, CPU_FP32_ARM)
    per_cycle = fp32
    if dtype == "bf16":
        per_cycle = next((n for flag, n in CPU_BF16_FLOP_PER_CYCLE if flag in flags), 2 * fp32)
    gflops = logical_cpus * max_mhz * 1e-3 * per_cycle
    return Limit(gflops, f"{logical_cpus} CPUs x {max_mhz:,.0f} MHz x {per_cycle} {dtype} FLOP/cycle")
