"""Whether the torch build carries kernels for each GPU, decided from plain values so fakes can test it.

The build's arch list is held against the device's architecture (CUDA sm and PTX, ROCm gfx targets).

A build without kernels for the GPU otherwise shows up late, as "no kernel image is available"
(CUDA) or "invalid device function" (ROCm), with no word on which build to install.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rigcheck.engine.events import Status

CUDA_ENTRY = re.compile(r"(sm|compute)_(\d+)(\d)([af]?)")
PYTORCH_WHEELS = "https://download.pytorch.org/whl"
# LLVM's generic ROCm targets, and the gfx names each one's code runs on.
ROCM_GENERIC = {
    "gfx9-4-generic": ("gfx940", "gfx941", "gfx942", "gfx950"),
    "gfx10-1-generic": ("gfx101",),
    "gfx10-3-generic": ("gfx103",),
    "gfx11-generic": ("gfx11",),
    "gfx12-generic": ("gfx12",),
}
# Where a ROCm build for a target is known to be published, beyond pytorch.org's ROCm wheels.
ROCM_WHEELS = {
    "gfx1151": "pip install --pre torch --index-url https://rocm.nightlies.amd.com/v2/gfx1151/",
}
OVERRIDE_VAR = "HSA_OVERRIDE_GFX_VERSION"


@dataclass(frozen=True)
class ArchFit:
    """The verdict on one GPU against the build: its status and the one line that says why and what next."""

    status: Status
    explanation: str


def cuda_install(major: int, minor: int) -> str:
    """Which torch build to install for a GPU of compute capability major.minor."""
    sm = f"sm_{major}{minor}"
    if (major, minor) < (5, 0):
        wheels = f"pip install torch --index-url {PYTORCH_WHEELS}/cu118"
        return f"install an older torch whose CUDA 11.8 build lists {sm} ({wheels})"
    if (major, minor) < (7, 5):
        return (
            f"install a CUDA 12.6 build of torch (pip install torch --index-url {PYTORCH_WHEELS}/cu126) or a "
            f"CUDA 11.8 one ({PYTORCH_WHEELS}/cu118): CUDA 13 dropped sm_50 to sm_72, and recent builds with them"
        )
    if major < 10:
        wheels = f"pip install torch --index-url {PYTORCH_WHEELS}/cu126"
        return f"install a CUDA 12.6 or later build of torch that lists {sm} ({wheels})"
    return (
        f"install a CUDA 12.8 or later build of torch that lists {sm} "
        f"(pip install torch --index-url {PYTORCH_WHEELS}/cu128, or cu130)"
    )


def _cuda_entries(arch_list: Sequence[str]) -> list[tuple[str, int, int, str, str]]:
    """(entry, major, minor, kind sm/compute, suffix a/f/'') of each CUDA entry in the arch list."""
    found = []
    for entry in arch_list:
        match = CUDA_ENTRY.fullmatch(entry.strip())
        if match:
            kind, major, minor, suffix = match.groups()
            found.append((entry.strip(), int(major), int(minor), kind, suffix))
    return found


def cuda_fit(arch_list: Sequence[str], name: str, major: int, minor: int) -> ArchFit:
    """Kernels run on a GPU when the build has its sm (or a lower minor of its major: binary compatible),
    or PTX of a capability at most its own, which the driver compiles for it on first use."""
    sm = f"sm_{major}{minor}"
    has = ", ".join(arch_list)
    entries = _cuda_entries(arch_list)
    exact_suffix_ok = {"", "a", "f"}
    for entry, e_major, e_minor, kind, suffix in entries:
        if kind == "sm" and (e_major, e_minor) == (major, minor) and suffix in exact_suffix_ok:
            return ArchFit(Status.PASS, f"{name} ({sm}): this torch build has kernels for it ({entry})")
    for entry, e_major, e_minor, kind, suffix in entries:
        if kind == "sm" and suffix != "a" and e_major == major and e_minor < minor:
            return ArchFit(Status.PASS, f"{name} ({sm}): runs this torch build's {entry} kernels (binary compatible)")
    ptx = [
        (e_major, e_minor, entry)
        for entry, e_major, e_minor, kind, suffix in entries
        if kind == "compute"
        and (e_major, e_minor) <= (major, minor)
        and (suffix == "" or (e_major, e_minor) == (major, minor))
    ]
    if ptx:
        entry = max(ptx)[2]
        return ArchFit(
            Status.PASS,
            f"{name} ({sm}): this torch build has no {sm} kernels, but PTX ({entry}) that the driver JIT-compiles "
            f"for it on first use: the first run of each kernel is slow and {sm}'s newer instructions go unused; "
            "a build that lists it avoids both",
        )
    return ArchFit(
        Status.FAIL,
        f"{name} is {sm}, but this torch build has kernels only for {has or 'no GPU'}: every GPU stage on it will "
        f"fail with 'no kernel image is available'; {cuda_install(major, minor)}",
    )


def gfx_base(arch: str) -> str:
    """gfx90a:sramecc+:xnack- -> gfx90a: the target without its feature flags."""
    return arch.strip().split(":")[0]


def override_target(value: str) -> str | None:
    """HSA_OVERRIDE_GFX_VERSION=11.0.0 -> gfx1100 (major, then minor and stepping in hex: 9.0.10 -> gfx90a)."""
    parts = value.strip().split(".")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    major, minor, stepping = (int(p) for p in parts)
    return f"gfx{major}{minor:x}{stepping:x}"


def rocm_has(arch_list: Sequence[str], gfx: str) -> str | None:
    """The entry of the build's targets whose code runs on `gfx`: itself, or a generic target covering it."""
    targets = [gfx_base(entry) for entry in arch_list]
    if gfx in targets:
        return gfx
    for target in targets:
        if any(gfx.startswith(prefix) for prefix in ROCM_GENERIC.get(target, ())):
            return target
    return None


def rocm_install(gfx: str) -> str:
    known = ROCM_WHEELS.get(gfx)
    return f"install a ROCm build of torch that lists {gfx}" + (f" (for example: {known})" if known else "")


def rocm_fit(arch_list: Sequence[str], name: str, arch: str, env: Mapping[str, str]) -> ArchFit:
    """A ROCm build runs a GPU whose gfx target it lists; HSA_OVERRIDE_GFX_VERSION makes ROCm load
    another target's code instead, which then must be in the build."""
    gfx = gfx_base(arch)
    has = ", ".join(gfx_base(entry) for entry in arch_list) or "no GPU"
    override = env.get(OVERRIDE_VAR)
    if override is not None and override.strip():
        target = override_target(override)
        setting = f"{OVERRIDE_VAR}={override}"
        if target is None:
            return ArchFit(
                Status.FAIL,
                f"{name} ({gfx}): {setting} is not a gfx version (major.minor.stepping, such as 11.0.0): "
                f"unset {OVERRIDE_VAR} or fix its value",
            )
        seen = f"{name} ({gfx})" if gfx != target else f"{name} (which ROCm now reports as {gfx})"
        if rocm_has(arch_list, target):
            return ArchFit(
                Status.WARN,
                f"{setting} makes ROCm run {seen} as {target}, which this torch build has: it runs on code built "
                f"for another chip; {rocm_install(gfx) if gfx != target else 'install a ROCm build that lists the GPU'}"
                f" and unset {OVERRIDE_VAR}",
            )
        return ArchFit(
            Status.FAIL,
            f"{setting} makes ROCm run {seen} as {target}, which this torch build lacks (it has {has}): every GPU "
            f"stage will fail with 'invalid device function'; set {OVERRIDE_VAR} to a target the build has, "
            f"or unset it and {rocm_install(gfx)}",
        )
    entry = rocm_has(arch_list, gfx)
    if entry == gfx:
        return ArchFit(Status.PASS, f"{name} ({gfx}): this torch build has code for it")
    if entry:
        return ArchFit(Status.PASS, f"{name} ({gfx}): runs this torch build's {entry} code")
    return ArchFit(
        Status.FAIL,
        f"{name} is {gfx}, but this ROCm build of torch has code only for {has}: every GPU stage on it will fail "
        f"with 'invalid device function'; {rocm_install(gfx)}",
    )


def arch_fit(build: str, arch_list: Sequence[str], device: Mapping[str, object], env: Mapping[str, str]) -> ArchFit:
    """One GPU's probe facts (name, arch, compute_capability) against the build's arch list."""
    name = str(device.get("name") or "this GPU")
    arch = str(device.get("arch") or "")
    if not arch_list:
        return ArchFit(
            Status.SKIP, f"{name} ({arch or '?'}): torch reported no architecture list, so the build's fit is not known"
        )
    if build == "ROCm":
        return rocm_fit(arch_list, name, arch, env)
    major, _, minor = str(device.get("compute_capability") or "").partition(".")
    if not (major.isdigit() and minor.isdigit()):
        return ArchFit(
            Status.SKIP,
            f"{name}: no compute capability known, so the build's fit is not known; "
            "see what this Python prints for: import torch; print(torch.cuda.get_device_capability())",
        )
    return cuda_fit(arch_list, name, int(major), int(minor))
