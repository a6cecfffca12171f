"""The physical limit of each figure on the device it was measured on: datasheet peaks, else a bound
from the chip's units and clock; the host link from the driver or sysfs; the CPU from its flags.
A dtype the GPU only emulates or runs rate-limited is bounded by the fp32 rate it falls back to."""

from __future__ import annotations

import functools
import platform
import re
from pathlib import Path

import torch
from rigcheck.engine.facts.dtypes import slow_dtypes
from rigcheck.engine.facts.host import cpu_facts
from rigcheck.engine.hw.gpu_at import gpu_at
from rigcheck.engine.hw.nvml import NvmlUnavailable, ok, open_nvml
from rigcheck.engine.hw.pci import PCI_DEVICES, sysfs_max_link, torch_bus_id
from rigcheck.engine.measure.board_roofline import per_sample
from rigcheck.engine.measure.plausibility import Limit, cpu_matmul_limit, pcie_limit
from rigcheck.engine.stages.common.peaks import bandwidth_peak, matmul_peak

GENEROUS_CLOCK_GHZ = 2.6  # above every shipping GPU's boost clock, for bounds without a datasheet
# Dense matrix FLOPs per clock per SM/CU, by architecture and dtype (from the vendors' whitepapers,
# rounded up where a family varies).
UNIT_FLOP_PER_CLOCK: dict[str, dict[str, int]] = {
    "sm_50": {"fp32": 256},
    "sm_52": {"fp32": 256},
    "sm_60": {"fp32": 128, "fp16": 256},
    "sm_61": {"fp32": 256},
    "sm_70": {"fp32": 128, "fp16": 1024},
    "sm_75": {"fp32": 128, "fp16": 1024},
    "sm_80": {"fp32": 128, "tf32": 1024, "fp16": 2048, "bf16": 2048},
    "sm_86": {"fp32": 256, "tf32": 512, "fp16": 1024, "bf16": 1024},
    "sm_89": {"fp32": 256, "tf32": 512, "fp16": 1024, "bf16": 1024, "fp8": 2048},
    "sm_90": {"fp32": 256, "tf32": 2048, "fp16": 4096, "bf16": 4096, "fp8": 8192},
    "sm_100": {"fp32": 256, "tf32": 4096, "fp16": 8192, "bf16": 8192, "fp8": 16384},
    "sm_120": {"fp32": 256, "tf32": 2048, "fp16": 4096, "bf16": 4096, "fp8": 8192},
    "gfx90a": {"fp32": 256, "fp16": 1024, "bf16": 1024},
    "gfx942": {"fp32": 512, "tf32": 1024, "fp16": 2048, "bf16": 2048, "fp8": 4096},
    "gfx11": {"fp32": 256, "fp16": 1024, "bf16": 1024},
    "gfx12": {"fp32": 256, "fp16": 2048, "bf16": 2048, "fp8": 4096},
}


def arch_of(device: torch.device) -> str:
    props = torch.cuda.get_device_properties(device)
    if getattr(torch.version, "hip", None):
        return (getattr(props, "gcnArchName", "") or "").split(":")[0]
    return f"sm_{props.major}{props.minor}"


def _unit_rates(arch: str) -> dict[str, int] | None:
    if arch in UNIT_FLOP_PER_CLOCK:
        return UNIT_FLOP_PER_CLOCK[arch]
    family = re.match(r"(gfx1[12])", arch)
    return UNIT_FLOP_PER_CLOCK.get(family.group(1)) if family else None


def gpu_matmul_limit(device: torch.device, dtype: str) -> Limit | None:
    """TFLOP/s: the datasheet's dense peak, else units x a generous clock x FLOPs per clock; for a dtype
    this GPU emulates or rate-limits, the fp32 limit, since its matrix multiplies convert to fp32."""
    arch = arch_of(device)
    slow = slow_dtypes(arch).get(dtype)
    if slow is None:
        return _native_limit(device, dtype, arch)
    fp32 = _native_limit(device, "fp32", arch)
    return Limit(fp32.value, f"{slow}, so at most the fp32 rate: {fp32.basis}") if fp32 else None


def _native_limit(device: torch.device, dtype: str, arch: str) -> Limit | None:
    name = torch.cuda.get_device_name(device)
    peak, source = matmul_peak(name, dtype)
    if peak:
        return Limit(peak, f"datasheet dense {dtype} peak: {source}")
    rates = _unit_rates(arch)
    per_clock = rates.get(dtype) if rates else None
    if per_clock is None:
        return None
    units = torch.cuda.get_device_properties(device).multi_processor_count
    value = units * GENEROUS_CLOCK_GHZ * per_clock / 1e3
    return Limit(value, f"{units} units x {GENEROUS_CLOCK_GHZ} GHz x {per_clock} {dtype} FLOP/clock ({arch})")


def cpu_limit(dtype: str) -> Limit | None:
    """GFLOP/s of every logical CPU at its top frequency."""
    facts = cpu_facts()
    mhz = facts.get("max_mhz") or _cpuinfo_top_mhz()
    return cpu_matmul_limit(facts.get("logical_cpus"), mhz, facts.get("flags") or [], dtype, facts.get("machine", ""))


def cpu_training_limit(channels: int, precision: str) -> Limit | None:
    """Samples/s of the board network if each sample's conv FLOPs ran at the CPU's fp32 limit: a training figure
    above it is impossible, and a measured CPU's share of it is what the parent expects of this CPU."""
    compute = cpu_limit("fp32")
    if compute is None:
        return None
    flops = per_sample(channels, precision)[0]
    return Limit(compute.value * 1e9 / flops, f"{compute.basis}, over {flops / 1e6:,.0f} MFLOP per c{channels} sample")


def _cpuinfo_top_mhz() -> float | None:
    """Where cpufreq is not exposed (virtual machines), 1.5x the highest MHz /proc/cpuinfo shows: turbo
    can run above the nominal figure a VM reports."""
    try:
        values = [float(v) for v in re.findall(r"^cpu MHz\s*:\s*([\d.]+)", Path("/proc/cpuinfo").read_text(), re.M)]
    except OSError:
        return None
    return max(values) * 1.5 if values else None


def device_copy_limit(device: torch.device) -> Limit | None:
    """GB/s of bytes read plus written: the datasheet's memory bandwidth."""
    peak, source = bandwidth_peak(torch.cuda.get_device_name(device))
    return Limit(peak, f"datasheet memory bandwidth: {source}") if peak else None


def bus_id(device: torch.device) -> str | None:
    return torch_bus_id(torch.cuda.get_device_properties(device))


def host_link_limit(device: torch.device) -> Limit | None:
    """GB/s one way between host and GPU: the link's top generation and width, from NVML, else sysfs."""
    if bool(getattr(torch.cuda.get_device_properties(device), "is_integrated", False)):
        return None  # an APU's "copies" stay in one memory: no link to bound them
    if platform.machine() == "aarch64":
        return None  # Grace Hopper joins CPU and GPU by NVLink-C2C (about 450 GB/s a way), not PCIe: no bound known
    address = bus_id(device)
    if address is None:
        return None
    return _nvml_link(address) or _sysfs_link(address)


@functools.cache
def _nvml_link(address: str) -> Limit | None:
    """The link's top generation and width as NVML reports them."""
    nvml = open_nvml()
    if isinstance(nvml, NvmlUnavailable):
        return None
    try:
        handle = gpu_at(nvml, address)  # None where NVML cannot place it: no bound rather than another GPU's
        if handle is None:
            return None
        gens = [ok(nvml.pcie_max_generation(handle)) or None, ok(nvml.pcie_gpu_max_generation(handle)) or None]
        width = ok(nvml.pcie_max_width(handle)) or None
        if not any(gens) or not width:
            return None
        return pcie_limit(max(g for g in gens if g), None, width, "NVML's maximum link")
    finally:
        nvml.close()


def _sysfs_link(address: str, root: Path = PCI_DEVICES) -> Limit | None:
    found = sysfs_max_link(address, root)
    return pcie_limit(None, found[0], found[1], "sysfs max_link_speed") if found else None
