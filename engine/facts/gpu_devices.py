"""Per-GPU facts from torch, joined with what the driver says about the same device."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from rigcheck.engine.facts.amd_driver import amd_cards, memory_pool
from rigcheck.engine.facts.dtypes import amd_matrix_dtypes, nvidia_matrix_dtypes, slow_dtypes
from rigcheck.engine.facts.gpu_props import amd_props
from rigcheck.engine.hw.amdgpu import DRM_ROOT
from rigcheck.engine.hw.pci import torch_bus_id


def torch_device(torch: Any, index: int) -> dict[str, Any]:
    props = torch.cuda.get_device_properties(index)
    hip = getattr(torch.version, "hip", None)
    arch = getattr(props, "gcnArchName", None) if hip else f"sm_{props.major}{props.minor}"
    free, total = torch.cuda.mem_get_info(index)
    uuid = getattr(props, "uuid", None)
    return {
        "index": index,
        "name": props.name,
        "vendor": "AMD" if hip else "NVIDIA",
        "arch": arch,
        "compute_capability": f"{props.major}.{props.minor}",
        "multiprocessors": props.multi_processor_count,
        "multiprocessor_kind": "CUs" if hip else "SMs",
        "l2_bytes": getattr(props, "L2_cache_size", None),
        "integrated": bool(getattr(props, "is_integrated", False)),
        "memory_torch_total": props.total_memory,
        "memory_runtime_free": free,
        "memory_runtime_total": total,
        "uuid": str(uuid) if uuid is not None else None,
        "pci": torch_bus_id(props),
        "matrix_dtypes": amd_matrix_dtypes(arch or "") if hip else nvidia_matrix_dtypes(props.major, props.minor),
        "slow_dtypes": slow_dtypes(arch or ""),
    }


def join_nvidia(device: dict[str, Any], driver: dict[str, Any]) -> dict[str, Any]:
    """Attach the driver's view of the same GPU, matched by UUID, else by position."""
    candidates = driver.get("devices") or []
    match = next(
        (d for d in candidates if device["uuid"] and (d.get("uuid") or "").endswith(device["uuid"])),
        None,
    )
    if match is None and len(candidates) > device["index"]:
        match = candidates[device["index"]]
    if match:
        device["memory_driver_total"] = match.get("memory_total")
        device["memory_driver_used"] = match.get("memory_used")
        device["driver_index"] = match.get("index")
        for key in ("sm_clock_max_mhz", "mem_clock_max_mhz", "memory_bus_bits"):  # its derived peaks' inputs
            device[key] = match.get(key)
    device["memory_pool_bytes"] = device.get("memory_driver_total") or device["memory_torch_total"]
    device["memory_pool_source"] = "driver" if device.get("memory_driver_total") else "torch"
    return device


def join_amd(device: dict[str, Any], drm_root: Path = DRM_ROOT) -> dict[str, Any]:
    """Attach sysfs VRAM/GTT totals, matched by PCI address, else by position; pick the real pool."""
    found = amd_props().get(device.get("pci") or "")
    if found is not None:  # its derived peaks' inputs, from amdgpu's KFD topology (measure/arch_peaks.py)
        device |= {"sm_clock_max_mhz": found.sm_clock_max_mhz, "mem_clock_max_mhz": found.mem_clock_max_mhz}
        device["memory_bus_bits"] = found.memory_bus_bits
    cards = amd_cards(drm_root)
    match = next((c for c in cards if device["pci"] and c["pci"] == device["pci"]), None)
    if match is None and len(cards) > device["index"]:
        match = cards[device["index"]]
    if match is None:
        device["memory_pool_bytes"] = device["memory_torch_total"]
        device["memory_pool_source"] = "torch (no amdgpu sysfs entry found)"
        return device
    device["memory_driver_vram"] = match["vram_total"]
    device["memory_driver_gtt"] = match["gtt_total"]
    pool = memory_pool(match, device["integrated"] or None)
    device["memory_pool_bytes"] = pool["pool_bytes"]
    device["memory_pool_source"] = pool["pool_source"]
    if pool["note"]:
        device["memory_note"] = pool["note"]
    return device


def why_no_gpu(
    build: str,
    available: bool,
    count: int,
    environ: dict[str, str] | None = None,
    dev_root: Path = Path("/dev"),
) -> str | None:
    """A plain sentence saying why torch sees no GPU, or None when it sees one."""
    if available and count > 0:
        return None
    env = dict(os.environ if environ is None else environ)
    if build == "CPU-only":
        return "this torch is a CPU-only build: install a CUDA or ROCm build to use a GPU"
    for var in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"):
        if var in env and env[var].strip() in ("", "-1", "none", "NoDevFiles"):
            return f"every GPU is hidden by {var}={env[var]!r}"
    nodes = "nvidia0" if build == "CUDA" else "kfd"
    if not (dev_root / nodes).exists():
        return f"this torch is a {build} build but /dev/{nodes} is missing: no GPU driver is loaded"
    return f"this torch is a {build} build and the driver is present, but torch found no usable device"
