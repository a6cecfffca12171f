"""Physical limits a figure cannot exceed, the sentence that rejects one that does, and its likely cause.

Standard library only: the stage children compute limits with it, and the parent checks figures
against the limit a child reported without importing torch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

# A measured figure may exceed its computed limit by this much before it is called impossible: the
# limits are already generous (datasheet boost-clock peaks, every logical CPU at its top frequency),
# so anything past them is a broken timer, work other than what was asked, or a wrong byte or FLOP
# count, never a fast machine.
LIMIT_MARGIN = 0.10
IMPOSSIBLE = "impossible: "

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
    return f"{IMPOSSIBLE}{value:,.4g} {unit} is {ratio:.3g}x the limit of {limit:,.4g} ({basis})"


def is_over_limit(reason: str | None) -> bool:
    """Whether a broken-figure reason is `over_limit`'s (and not, say, two clocks that disagree)."""
    return bool(reason) and str(reason).startswith(IMPOSSIBLE)


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


@dataclass(frozen=True)
class Cause:
    """Why a figure is not a result, and the next thing to run or change."""

    text: str
    next_step: str


# Set to anything but 0, these make the math library run fp32 matrix multiplies as TF32.
TF32_OVERRIDE_VARS = (
    ("NVIDIA_TF32_OVERRIDE", "it makes cuBLAS and cuDNN use TF32"),
    ("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "it turns torch's TF32 on for every fp32 matrix multiply"),
)
# A reduced-precision reduction can at most double a half-precision matrix multiply's rate.
REDUCED_REDUCTION_GAIN = 2.0
COUNT_MISMATCH = Cause(
    "the FLOP or byte count does not match the work done",
    "report it as a rigcheck bug with this stage's log",
)


@dataclass(frozen=True)
class MathMode:
    """What could make a matrix multiply run as something faster than asked, read when its figure was taken."""

    env: Mapping[str, str]
    allow_tf32: bool | None = None  # torch.backends.cuda.matmul.allow_tf32
    float32_precision: str | None = None  # torch.get_float32_matmul_precision()
    cudnn_allow_tf32: bool | None = None  # torch.backends.cudnn.allow_tf32
    fp16_reduced_reduction: bool | None = None  # torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction
    bf16_reduced_reduction: bool | None = None  # torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction


def timer_cause(disagreement: str, impossible: str | None) -> Cause:
    """Two clocks that read one interval differently: the timer is broken, whatever the figure's size."""
    text = f"{disagreement}: the timer is broken" + (f" ({impossible})" if impossible else "")
    if disagreement.startswith("two host clocks"):
        step = (
            "check the host's clock source: cat /sys/devices/system/clocksource/clocksource0/current_clocksource; "
            "dmesg | grep -i clocksource"
        )
    else:
        step = "run the stage again alone on this GPU; if it repeats, check the driver (nvidia-smi -q or rocm-smi)"
    return Cause(text, step)


def excess_cause(
    dtype: str | None,
    value: float,
    limit: float,
    mode: MathMode,
    faster_limits: Mapping[str, float] | None = None,
    uses_cudnn: bool = False,
    margin: float = LIMIT_MARGIN,
) -> Cause:
    """Why a figure over its limit, with two clocks that agree, was not the work asked for.

    In order: a math-mode override in the environment, torch's own flags, a figure that fits the
    limit of a faster dtype (so it ran as that one), and else a work count that does not match.
    """
    if dtype == "fp32":
        for name, effect in TF32_OVERRIDE_VARS:
            set_to = mode.env.get(name)
            if set_to is not None and set_to.strip() not in ("", "0"):
                return Cause(f"fp32 ran as TF32: {name}={set_to} is set in the environment ({effect})", f"unset {name}")
        precision = mode.float32_precision
        if precision in ("high", "medium"):
            as_what = "TF32" if precision == "high" else "TF32 or bf16"
            return Cause(
                f"fp32 ran as {as_what}: torch.get_float32_matmul_precision() is {precision!r}",
                "call torch.set_float32_matmul_precision('highest') before measuring",
            )
        if mode.allow_tf32:
            return Cause(
                "fp32 ran as TF32: torch.backends.cuda.matmul.allow_tf32 is True",
                "set torch.backends.cuda.matmul.allow_tf32 = False before measuring",
            )
        if uses_cudnn and mode.cudnn_allow_tf32:
            return Cause(
                "fp32 convolutions ran as TF32: torch.backends.cudnn.allow_tf32 is True (torch's default)",
                "set torch.backends.cudnn.allow_tf32 = False before measuring",
            )
    for faster, faster_limit in (faster_limits or {}).items():
        if faster_limit and value <= faster_limit * (1.0 + margin):
            return Cause(
                f"{dtype} ran as {faster}: the figure fits the {faster} limit of {faster_limit:,.4g}, and no "
                "override was found in the environment or torch's flags",
                "look for what sets the math mode: env | grep -i -e tf32 -e precision -e blas",
            )
    reduced = {"fp16": mode.fp16_reduced_reduction, "bf16": mode.bf16_reduced_reduction}.get(dtype or "")
    if reduced and value <= limit * REDUCED_REDUCTION_GAIN * (1.0 + margin):
        flag = f"torch.backends.cuda.matmul.allow_{dtype}_reduced_precision_reduction"
        return Cause(
            f"{dtype} may have reduced in {dtype} rather than fp32: {flag} is True",
            f"set {flag} = False and run again to rule it out",
        )
    return COUNT_MISMATCH
