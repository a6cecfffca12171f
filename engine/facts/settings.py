"""The one table of settings that change what a figure measures or how fast: which figure kinds each changes, how,
and what to do about it; which are in force now; and which of them a given figure is subject to.

Probe reports each setting in force as a note naming the figures it can change; the parent puts the ones that
affect a figure in its conditions (`settings`); the cause function (engine/trust/cause.py) names a setting as
a slow figure's cause ahead of "the software stack". Standard library only: probe's child and the parent use it.
The measured effects are from one H200 (DESIGN §8, 2026-12-02).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from rigcheck.engine.registry import STAGES

# The kinds of figure a setting can change; `figure_kinds` says which a figure is.
CPU = "CPU figures"
GPU = "GPU figures"
GPU_FP32 = "GPU fp32 matrix multiplies"
GPU_TF32 = "GPU tf32 matrix multiplies"
GPU_BLAS = "GPU matrix multiplies and training"
GPU_ALLOC = "GPU training (figures that allocate as they go)"
LINKS = "collectives between GPUs (links)"
HOST_LINK = "host-to-device copies"
FIRST_CALL = "first-call latency"


@dataclass(frozen=True)
class HostSettings:
    """What is read from the host rather than the environment; None where it cannot be read."""

    usable_cpus: int | None = None
    physical_cpus: int | None = None
    torch_threads: int | None = None
    governor: str | None = None
    numa_balancing: str | None = None
    persistence_off: tuple[str, ...] = ()  # GPUs whose driver persistence mode is off


@dataclass(frozen=True)
class Rule:
    """One setting: its name, the figure kinds it changes, how (with the effect measured), the next step,
    whether it lowers the figures (False: it makes them measure other work, usually faster), and when a
    value changes figures at all."""

    name: str
    affects: tuple[str, ...]
    effect: str
    next_step: str
    slows: bool = True
    applies: Callable[[str, HostSettings], bool] = field(default=lambda value, host: True)


@dataclass(frozen=True)
class InForce:
    """A setting in force: the rule's words with its value filled in. Stored as a dict in a figure's conditions."""

    name: str
    value: str
    affects: tuple[str, ...]
    effect: str
    next_step: str
    slows: bool

    def words(self) -> str:
        return f"{self.name}={self.value} ({self.effect})"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self) | {"affects": list(self.affects)}

    @staticmethod
    def from_dict(data: Mapping[str, Any]) -> InForce:
        return InForce(
            str(data.get("name", "?")),
            str(data.get("value", "")),
            tuple(data.get("affects") or ()),
            str(data.get("effect", "")),
            str(data.get("next_step", "")),
            bool(data.get("slows", True)),
        )


def _on(value: str, host: HostSettings) -> bool:
    return value.strip() not in ("", "0")


def _below_usable(value: str, host: HostSettings) -> bool:
    try:
        count = int(value.strip())
    except ValueError:
        return False
    return host.usable_cpus is not None and 0 < count < host.usable_cpus


def _threads_below(value: str, host: HostSettings) -> bool:
    """torch's pool defaults to the physical cores: below those (or the usable CPUs, if fewer) it was narrowed."""
    ceiling = min(c for c in (host.usable_cpus, host.physical_cpus, 10**6) if c)
    return _below_usable(value, HostSettings(usable_cpus=ceiling))


def _tf32_off(value: str, host: HostSettings) -> bool:
    return value.strip() == "0"


def _not_performance(value: str, host: HostSettings) -> bool:
    return value not in ("performance", "not exposed", "")


def _numa_on(value: str, host: HostSettings) -> bool:
    return value.strip() not in ("", "0")


SETTINGS: tuple[Rule, ...] = (
    Rule(
        "OMP_NUM_THREADS",
        (CPU,),
        "caps OpenMP's threads, torch's CPU pool among them, below the usable CPUs: CPU figures fall with it "
        "(fp32 512 matmul: 998 to 157 GFLOP/s at 1 of 16 CPUs on an H200 host)",
        "unset OMP_NUM_THREADS, or set it to the CPUs rigcheck may use, and run again",
        applies=_below_usable,
    ),
    Rule(
        "MKL_NUM_THREADS",
        (CPU,),
        "caps MKL's threads below the usable CPUs: CPU matrix multiplies fall with it",
        "unset MKL_NUM_THREADS, or set it to the CPUs rigcheck may use, and run again",
        applies=_below_usable,
    ),
    Rule(
        "torch threads",
        (CPU,),
        "torch.get_num_threads() is below the CPUs it would use by default: CPU figures fall with it",
        "look for what calls torch.set_num_threads or sets OMP_NUM_THREADS, and run again without it",
        applies=_threads_below,
    ),
    Rule(
        "NVIDIA_TF32_OVERRIDE",
        (GPU_TF32,),
        "set to 0, it makes cuBLAS run TF32 matrix multiplies as full fp32: tf32 falls to the fp32 rate "
        "(4096: 49.9 TFLOP/s on an H200, against about 350)",
        "unset NVIDIA_TF32_OVERRIDE and run again",
        applies=_tf32_off,
    ),
    Rule(
        "NVIDIA_TF32_OVERRIDE",
        (GPU_FP32,),
        "it makes cuBLAS and cuDNN run fp32 matrix multiplies as TF32: fp32 figures are TF32's "
        "(400 TFLOP/s at 4096 on an H200), not fp32's",
        "unset NVIDIA_TF32_OVERRIDE and run again",
        slows=False,
        applies=lambda value, host: _on(value, host) and not _tf32_off(value, host),
    ),
    Rule(
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
        (GPU_FP32,),
        "asks torch to run every fp32 matrix multiply as TF32: where it takes effect, fp32 figures are TF32's "
        "(named on a figure only where its rate shows it)",
        "unset TORCH_ALLOW_TF32_CUBLAS_OVERRIDE and run again",
        slows=False,
        applies=_on,
    ),
    Rule(
        "CUDA_LAUNCH_BLOCKING",
        (GPU,),
        "makes every GPU launch wait for the one before: bf16 4096 matmul fell from about 780 to 700 TFLOP/s "
        "on an H200, and short or overlapped work falls further",
        "unset CUDA_LAUNCH_BLOCKING (a debugging setting) and run again",
        applies=_on,
    ),
    Rule(
        "PYTORCH_NO_CUDA_MEMORY_CACHING",
        (GPU_ALLOC,),
        "turns off torch's caching allocator, so every allocation goes to the driver: GPU training fell "
        "3.6-4x on an H200 (b1024 fp32: 114,187 to 29,767 samples/s)",
        "unset PYTORCH_NO_CUDA_MEMORY_CACHING and run again",
        applies=_on,
    ),
    Rule(
        "PYTORCH_CUDA_ALLOC_CONF",
        (GPU_ALLOC,),
        "changes how torch's allocator splits, keeps and frees blocks: figures that allocate as they go may change",
        "run again without PYTORCH_CUDA_ALLOC_CONF to compare",
    ),
    Rule(
        "PYTORCH_HIP_ALLOC_CONF",
        (GPU_ALLOC,),
        "changes how torch's allocator splits, keeps and frees blocks on ROCm: figures that allocate as they go "
        "may change",
        "run again without PYTORCH_HIP_ALLOC_CONF to compare",
    ),
    Rule(
        "CUBLAS_WORKSPACE_CONFIG",
        (GPU_BLAS,),
        "limits cuBLAS's workspace (set for deterministic results), so some of the fastest kernels cannot be used",
        "run again without CUBLAS_WORKSPACE_CONFIG to compare",
    ),
    Rule(
        "CUDA_DEVICE_MAX_CONNECTIONS",
        (GPU, LINKS),
        "sets how many hardware queues feed the GPU: at 1 (a Megatron setting) work on separate streams "
        "runs one after another, so overlapped copies and collectives slow",
        "unset CUDA_DEVICE_MAX_CONNECTIONS and run again",
    ),
    Rule(
        "NCCL_P2P_DISABLE",
        (LINKS,),
        "turns off NCCL's peer-to-peer transport (NVLink, PCIe): collectives go through host memory, several "
        "times slower",
        "unset NCCL_P2P_DISABLE and run again",
        applies=_on,
    ),
    Rule(
        "NCCL_SHM_DISABLE",
        (LINKS,),
        "turns off NCCL's shared-memory transport between processes of one host: collectives that would use it "
        "go over the network",
        "unset NCCL_SHM_DISABLE and run again",
        applies=_on,
    ),
    Rule(
        "NCCL_ALGO",
        (LINKS,),
        "forces NCCL's algorithm (Ring, Tree, NVLS, ...): busbw is that algorithm's, not the best one's",
        "unset NCCL_ALGO and run again",
    ),
    Rule(
        "NCCL_PROTO",
        (LINKS,),
        "forces NCCL's protocol (Simple, LL, LL128): busbw is that protocol's, not the best one's",
        "unset NCCL_PROTO and run again",
    ),
    Rule(
        "HSA_OVERRIDE_GFX_VERSION",
        (GPU,),
        "makes ROCm treat the GPU as another architecture and run kernels built for that one",
        "unset HSA_OVERRIDE_GFX_VERSION, or install a torch built for this GPU, and run again",
    ),
    Rule(
        "PYTORCH_TUNABLEOP_ENABLED",
        (GPU_BLAS,),
        "makes torch tune each GEMM shape on first use: first calls of a shape are slow, later ones may use "
        "other kernels than the default",
        "unset PYTORCH_TUNABLEOP_ENABLED and run again",
        applies=_on,
    ),
    Rule(
        "kernel.numa_balancing",
        (CPU, HOST_LINK),
        "the kernel moves pages between NUMA nodes while figures run: host copies and CPU figures vary "
        "(ROCm's tuning guides ask for it off)",
        "`sudo sysctl kernel.numa_balancing=0`, and run again",
        applies=_numa_on,
    ),
    Rule(
        "CPU frequency governor",
        (CPU,),
        "the CPU clock follows the load rather than staying high: CPU figures vary and may fall",
        "`sudo cpupower frequency-set -g performance`, and run again",
        applies=_not_performance,
    ),
    Rule(
        "persistence mode",
        (FIRST_CALL,),
        "off: the driver lets go of the GPU when no process holds it, and the first call after pays its start-up again",
        "`sudo nvidia-smi -pm 1`",
        applies=lambda value, host: value == "off",
    ),
)
# Read from what the figure ran with (engine/trust/mechanism.py), not from their presence: a figure's threads,
# its math mode. The table keeps their words to quote; the mechanism decides whether they changed a figure.
READ_BY_MECHANISM = (
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "torch threads",
    "NVIDIA_TF32_OVERRIDE",
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
)
HOST_READ = {
    "torch threads": "torch_threads",
    "kernel.numa_balancing": "numa_balancing",
    "CPU frequency governor": "governor",
}


def in_force(env: Mapping[str, str], host: HostSettings) -> list[InForce]:
    """Every setting of the table set now in a way that changes figures."""
    found: list[InForce] = []
    for rule in SETTINGS:
        shown: str | None
        if rule.name == "persistence mode":
            value = "off" if host.persistence_off else None
            shown = f"off on {', '.join(host.persistence_off)}" if host.persistence_off else ""
        elif rule.name in HOST_READ:
            raw = getattr(host, HOST_READ[rule.name])
            value = shown = None if raw is None else str(raw)
        else:
            value = shown = env.get(rule.name)
        if value is None or not rule.applies(value, host):
            continue
        if rule.name == "torch threads" and any(f.name == "OMP_NUM_THREADS" for f in found):
            continue  # the same narrowing, already named by its cause
        found.append(InForce(rule.name, shown or value, rule.affects, rule.effect, rule.next_step, rule.slows))
    return found


def read_host(proc: Path = Path("/proc"), cpu_sysfs: Path = Path("/sys/devices/system/cpu")) -> HostSettings:
    """The host's side of the table, read now: usable CPUs, the governor, NUMA balancing. Never raises."""

    def text(path: Path) -> str | None:
        try:
            return path.read_text().strip()
        except OSError:
            return None

    try:
        usable: int | None = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = os.cpu_count()
    return HostSettings(
        usable_cpus=usable,
        governor=text(cpu_sysfs / "cpu0" / "cpufreq" / "scaling_governor"),
        numa_balancing=text(proc / "sys" / "kernel" / "numa_balancing"),
    )


def figure_kinds(stage: str, device: str, params: Mapping[str, Any]) -> set[str]:
    """Which kinds of figure this one is, for the table's `affects`."""
    if not device.startswith("cuda"):
        kinds = {CPU}
        return kinds | ({HOST_LINK} if params.get("bound") == "link" else set())
    kinds = {GPU}
    dtype = str(params.get("dtype") or params.get("precision") or "")
    info = STAGES.get(stage)
    declared = set(info.figure_kinds) if info is not None else set()  # the stage's registration says (registry.py)
    if "links" in declared:
        kinds.add(LINKS)
    if params.get("bound") == "link":
        kinds.add(HOST_LINK)
    if "blas" in declared:
        kinds.add(GPU_BLAS)
        kinds |= {GPU_FP32} if dtype == "fp32" else {GPU_TF32} if dtype == "tf32" else set()
    if "alloc" in declared:
        kinds.add(GPU_ALLOC)
    return kinds


def affecting(settings: Iterable[InForce], stage: str, device: str, params: Mapping[str, Any]) -> list[InForce]:
    """The settings in force that change this figure."""
    kinds = figure_kinds(stage, device, params)
    return [s for s in settings if kinds & set(s.affects)]
