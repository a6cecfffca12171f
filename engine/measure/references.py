"""What each known GPU model achieves, figure by figure, each with its source: what a lone GPU is judged against.

Standard library only: the matmul stage child (its best-of verdicts) and the parent (every figure after
a stage) both read it. A user's own baseline (`--baseline FILE`, made by `rigcheck export RUN --format
baseline`) takes the table's place for every figure it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from rigcheck.engine.events import Status

WARN_BELOW = 0.85  # a figure more than 15% below its model's reference is a WARN
FAIL_BELOW = 0.50  # below half of it, a FAIL


@dataclass(frozen=True)
class Model:
    """A GPU model as its device name shows it; `sms` tells apart variants that share a name's words."""

    key: str  # how a verdict names it: "the H200's ..."
    pattern: str  # searched, ignoring case, in the device name (and its architecture, where the caller knows it)
    vendor: str  # "nvidia" or "amd": which tool the next step names
    sms: int | None = None


@dataclass(frozen=True)
class Reference:
    """One figure a model achieves, in the figure's own unit, and where that number comes from."""

    model: str
    figure: str  # a measurement's name ("matmul bf16 8192"), or "best-<dtype>" for the best rate of a dtype
    value: float
    unit: str
    kind: str  # how a verdict cites it: "published MAMF", "rigcheck-measured", "baseline"
    source: str

    def cite(self) -> str:
        """'the H200's published MAMF 794.5', 'the baseline's 790.9 for NVIDIA H200'."""
        if self.kind == "baseline":
            return f"the baseline's {self.value:,.4g} for {self.model}"
        return f"the {self.model}'s {self.kind} {self.value:,.4g}"


MODELS: tuple[Model, ...] = (
    Model("H200", r"\bH200\b(?!.*\bNVL\b)", "nvidia"),  # \b keeps the GH200 out; the NVL is a 600 W PCIe card
    Model("H100 SXM", r"\bH100\b.*\b(HBM3|SXM)", "nvidia", sms=132),
    Model("GH200", r"\bGH200\b", "nvidia"),
    Model("GB200", r"\bGB200\b", "nvidia"),
    Model("B200", r"\bB200\b", "nvidia"),
    Model("B300", r"\bB300\b", "nvidia"),
    Model("A100 SXM", r"\bA100\b.*\bSXM", "nvidia"),
    Model("A100 PCIe", r"\bA100\b.*\bPCIe\b", "nvidia"),
    Model("T4", r"\bTesla T4\b|^NVIDIA T4\b", "nvidia"),
    Model("MI300X", r"\bMI300X\b", "amd"),
    Model("MI325X", r"\bMI325X\b", "amd"),
    Model("MI355X", r"\bMI355X\b", "amd"),
    Model("Radeon 8060S (Strix Halo)", r"\b8060S\b|\bgfx1151\b", "amd"),
)

MAMF = (
    "stas00/ml-engineering, compute/accelerator/README.md, 'Maximum Achievable Matmul FLOPS comparison table' "
    "(mean of 100 iterations at the best shape found; commit 744d01e, 2026-08)"
)
RIGCHECK_H200 = (
    "rigcheck on one H200 SXM (torch 2.11+cu130, CUDA 13.0, driver 580), 2026-11-29..12-01, median of the "
    "figure's timed groups; bench/RESULTS.md"
)
RIGCHECK_H200_DEFAULT = "rigcheck's default run on one H200 SXM (torch 2.11+cu130, driver 580), 2026-12-01"


def _mamf(model: str, dtype: str, value: float, row: str) -> Reference:
    return Reference(model, f"best-{dtype}", value, "TFLOP/s", "published MAMF", f"{MAMF}: {row}")


def _h200(figure: str, value: float, unit: str, source: str = RIGCHECK_H200) -> Reference:
    return Reference("H200", figure, value, unit, "rigcheck-measured", source)


# Left out, for want of a measured figure from a source: the Tesla P40 (its datasheet's 11.8 TFLOP/s fp32 is a
# peak, not what it achieves) and the Radeon PRO W7900. Pageable host copies are left out on purpose: they go
# through the driver's staging buffers and the host's page cache and NUMA placement, and on the same H200 host
# they gave 18 and 8.5 GB/s host to device in two runs, so no band around one figure would judge them.
REFERENCES: tuple[Reference, ...] = (
    # bf16, the published MAMF table
    _mamf("H200", "bf16", 794.5, "NVIDIA H100 SXM row, 'H200 is the same', 989 theory, torch 2.7.0+cu126"),
    _mamf("H100 SXM", "bf16", 794.5, "NVIDIA H100 SXM row, 989 theory, 2048x2048x13312, torch 2.7.0+cu126"),
    _mamf("GH200", "bf16", 828.6, "NVIDIA GH200 SXM row (900 W, 141 GiB HBM3e), torch 2.6.0+cu126"),
    _mamf("GB200", "bf16", 1822.0, "NVIDIA GB200 SXM row, per chip, torch 2.10.0.dev20250916+cu130"),
    _mamf("B200", "bf16", 1745.0, "NVIDIA B200 SXM row, 2250 theory, torch 2.7.1+cu128"),
    _mamf("B300", "bf16", 1769.0, "NVIDIA B300 SXM row, 2250 theory, torch 2.9.1+cu130"),
    _mamf("A100 SXM", "bf16", 271.2, "NVIDIA A100 SXM row, 312 theory, torch 2.6.0+cu126"),
    _mamf("A100 PCIe", "bf16", 252.9, "NVIDIA A100 PCIe row, 312 theory, torch 2.5.1+cu124"),
    _mamf("MI300X", "bf16", 668.4, "AMD MI300X row, 1300 theory, PYTORCH_TUNABLEOP_ENABLED=1, torch 2.5.1+rocm6.3"),
    _mamf("MI325X", "bf16", 784.9, "AMD MI325X row, 1000 W, PYTORCH_TUNABLEOP_ENABLED=1, torch 2.6.0+rocm6.2.4"),
    _mamf("MI355X", "bf16", 1565.0, "AMD MI355X row, 2300 theory, PYTORCH_TUNABLEOP_ENABLED=0, torch 2.8.0+rocm7.0.2"),
    # fp8 (float8_e4m3fn), the same table
    _mamf("H200", "fp8", 1453.4, "NVIDIA H200 SXM row, 1979 theory, torch 2.7.1+cu128"),
    _mamf("H100 SXM", "fp8", 1402.6, "NVIDIA H100 SXM row, 1979 theory, torch 2.7.0+cu126"),
    _mamf("GH200", "fp8", 1535.0, "NVIDIA GH200 SXM row (900 W), torch 2.6.0+cu126"),
    _mamf("GB200", "fp8", 3615.6, "NVIDIA GB200 SXM row, per chip, torch 2.10.0.dev20250916+cu130"),
    _mamf("B200", "fp8", 3432.5, "NVIDIA B200 SXM row, 4500 theory, torch 2.7.1+cu128"),
    _mamf("B300", "fp8", 3353.3, "NVIDIA B300 SXM row, 4500 theory, torch 2.9.1+cu130"),
    # the H200's other dtypes at their best size, and its figures one by one, as rigcheck measured them
    _h200("best-fp16", 737.0, "TFLOP/s"),  # at 8192; the 2026-12-01 default run gave 757.4
    _h200("best-tf32", 349.0, "TFLOP/s"),  # at 8192, the lower of two runs (the other 408); tf32 varies run to run
    _h200("best-fp32", 51.1, "TFLOP/s"),
    _h200("matmul bf16 4096", 776.0, "TFLOP/s"),
    _h200("matmul bf16 8192", 756.0, "TFLOP/s"),
    _h200("matmul bf16 16384", 683.0, "TFLOP/s"),
    _h200("matmul fp16 8192", 737.0, "TFLOP/s"),
    _h200("matmul tf32 8192", 349.0, "TFLOP/s"),  # the lower of two runs: the other gave 408
    _h200("matmul fp32 8192", 51.1, "TFLOP/s"),
    _h200("matmul fp32 4096", 50.5, "TFLOP/s", RIGCHECK_H200_DEFAULT),
    _h200("matmul tf32 4096", 401.8, "TFLOP/s", RIGCHECK_H200_DEFAULT),
    _h200("matmul fp16 4096", 750.6, "TFLOP/s", RIGCHECK_H200_DEFAULT),
    _h200("matmul fp8 4096", 1343.0, "TFLOP/s", RIGCHECK_H200_DEFAULT),
    _h200("matmul fp8 8192", 1393.0, "TFLOP/s", RIGCHECK_H200_DEFAULT),
    _h200("device copy 4 GiB", 4251.0, "GB/s"),  # bytes read plus written; 88% of the 4.8 TB/s datasheet
    _h200("host to device pinned 1 GiB", 55.0, "GB/s"),
    _h200("device to host pinned 1 GiB", 55.0, "GB/s"),
    _h200("train c128 b8192 fp32", 126_000.0, "samples/s"),
    _h200("train c128 b8192 bf16", 166_000.0, "samples/s"),
    _h200("train c64 b8192 fp32", 291_000.0, "samples/s"),
    _h200("train c64 b8192 bf16", 312_000.0, "samples/s"),
    # older and smaller parts
    Reference(
        "T4",
        "best-fp16",
        24.0,
        "TFLOP/s",
        "measured",
        "NVIDIA developer forums, 'About GPU peak performance' (forums.developer.nvidia.com/t/264462): cuBLAS fp16 "
        "4096x4096x4096, mean of 100, about 24 of the 65 peak, which NVIDIA's reply calls expected at the "
        "T4's 70 W cap",
    ),
    Reference(
        "Radeon 8060S (Strix Halo)",
        "best-bf16",
        27.8,
        "TFLOP/s",
        "rigcheck-measured",
        "rigcheck's seed machine (Ryzen AI MAX+ 395, Radeon 8060S, gfx1151), a contended host: a floor, not a target",
    ),
    Reference(
        "Radeon 8060S (Strix Halo)",
        "best-fp32",
        2.6,
        "TFLOP/s",
        "rigcheck-measured",
        "rigcheck's seed machine (Ryzen AI MAX+ 395, Radeon 8060S, gfx1151), a contended host: a floor, not a target",
    ),
)

# max-find's mean is judged against the same figure as the sweep's best of a dtype
ALIASES = {"max-find bf16": "best-bf16", "max-find fp8": "best-fp8"}


def model_of(device_name: str, sms: int | None = None, arch: str | None = None) -> Model | None:
    """The known model a device name (torch's or NVML's) belongs to, or None."""
    text = f"{device_name} {arch or ''}"
    for model in MODELS:
        if re.search(model.pattern, text, re.IGNORECASE) and (model.sms is None or sms is None or sms == model.sms):
            return model
    return None


def table_reference(device_name: str, figure: str, sms: int | None = None, arch: str | None = None) -> Reference | None:
    model = model_of(device_name, sms, arch)
    if model is None:
        return None
    wanted = {figure, ALIASES.get(figure, figure)}
    return next((r for r in REFERENCES if r.model == model.key and r.figure in wanted), None)


def _same_name(a: str, b: str) -> bool:
    return " ".join(a.split()).casefold() == " ".join(b.split()).casefold()


def baseline_reference(baseline: dict[str, Any], device_name: str, figure: str) -> Reference | None:
    """The baseline's figure for this device's model (its name exactly, as the baseline's run saw it)."""
    for wanted in dict.fromkeys((figure, ALIASES.get(figure, figure))):  # its own figure first, then its alias
        for key, entry in baseline.get("figures", {}).items():
            model, _, name = key.partition("/")
            if name == wanted and _same_name(model, device_name):
                source = str(entry.get("source") or baseline.get("source") or "the baseline file")
                return Reference(model, name, float(entry["value"]), str(entry.get("unit", "")), "baseline", source)
    return None


def reference_for(
    device_name: str,
    figure: str,
    baseline: dict[str, Any] | None = None,
    sms: int | None = None,
    arch: str | None = None,
) -> Reference | None:
    """The baseline's figure where a baseline was given (and names this one), else the table's; None if neither."""
    if baseline:
        found = baseline_reference(baseline, device_name, figure)
        if found is not None:
            return found
    return table_reference(device_name, figure, sms, arch)


def grade(value: float, reference: Reference) -> tuple[Status, float]:
    """FAIL below half of the reference, WARN more than 15% below it, else PASS; with the share of it."""
    share = value / reference.value
    if share < FAIL_BELOW:
        return Status.FAIL, share
    if share < WARN_BELOW:
        return Status.WARN, share
    return Status.PASS, share
