"""What a figure actually ran with, read in the stage child beside it: a CPU figure's threads (torch's, each BLAS's
through threadpoolctl) against the CPUs it may use, with whatever set them where that can be found (a variable, a
call in a sitecustomize or usercustomize on sys.path); a GPU figure's math mode (torch's TF32 flags and float32
matmul precision) with the fp32 rate it would have without TF32. The parent reads it (engine/trust/mechanism.py)
to name a figure's cause by what happened to it, not by the variables present.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from pathlib import Path
from typing import Any

from rigcheck.engine.hw.cgroup import read_cpu_limits

# The variables that set a thread pool's size, by whose pool: torch's (OpenMP, MKL) or numpy's BLAS.
TORCH_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
BLAS_VARIABLES = (
    "OPENBLAS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
)
# a call or assignment in a start-up file that narrows a pool: torch's, or numpy's BLAS
TORCH_SETTER = re.compile(r"set_num_threads\s*\(|OMP_NUM_THREADS|MKL_NUM_THREADS")
BLAS_SETTER = re.compile(r"threadpool_limits\s*\(|_NUM_THREADS|VECLIB_MAXIMUM_THREADS")
START_UP = ("sitecustomize", "usercustomize")
SYSFS_CPU = Path("/sys/devices/system/cpu")


def cores_of(cpus: frozenset[int] | None, sysfs: Path = SYSFS_CPU) -> int | None:
    """The physical cores among `cpus` (torch's pool defaults to the physical cores), from sysfs's thread
    siblings; None where they cannot be read."""
    if not cpus:
        return None
    cores: set[str] = set()
    for cpu in cpus:
        try:
            cores.add((sysfs / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text().strip())
        except OSError:
            return None
    return len(cores) or None


def start_up_setters(modules: dict[str, Any] | None = None, setter: re.Pattern[str] = TORCH_SETTER) -> list[str]:
    """The lines of a sitecustomize or usercustomize this interpreter ran at start that set a thread pool,
    as "torch.set_num_threads(1) in /path/sitecustomize.py line 3"."""
    modules = sys.modules if modules is None else modules
    found: list[str] = []
    for name in START_UP:
        path = getattr(modules.get(name), "__file__", None)
        if not path:
            continue
        try:
            lines = Path(path).read_text(errors="replace").splitlines()
        except OSError:
            continue
        for number, line in enumerate(lines, 1):
            if setter.search(line) and not line.lstrip().startswith("#"):
                found.append(f"{line.strip()[:80]} in {path} line {number}")
    return found


def variable_setters(names: tuple[str, ...], env: dict[str, str] | None = None) -> list[str]:
    env = dict(os.environ) if env is None else env
    return [f"{name}={env[name]}" for name in names if env.get(name, "").strip()]


@functools.cache
def _limits() -> dict[str, Any]:
    limits = read_cpu_limits()
    ceiling = limits.set_size
    cores = cores_of(limits.cpu_set or frozenset(range(limits.host_cpus)))
    # torch's pool defaults to the physical cores: where they cannot be read, assume two threads a core, so a
    # default pool is never taken for a narrowed one
    ceiling = min(ceiling, cores) if cores else max(1, ceiling // 2)
    if limits.tight_quota and limits.quota_cpus:
        ceiling = min(ceiling, max(1, int(limits.quota_cpus)))
    return {
        "usable_cpus": limits.set_size,
        "cores": cores,
        "quota_cpus": limits.quota_cpus if limits.tight_quota else None,
        "ceiling": ceiling,
    }


def blas_pools() -> list[dict[str, Any]]:
    """Each BLAS threadpoolctl sees (numpy's OpenBLAS, ...), sorted: its library, API and threads."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return []
    try:
        pools = [
            {
                "library": p.get("internal_api"),
                "file": Path(str(p.get("filepath", ""))).name,
                "threads": p["num_threads"],
            }
            for p in threadpool_info()
            if p.get("user_api") == "blas"
        ]
    except Exception:
        return []
    return sorted(pools, key=lambda p: (str(p["library"]), str(p["file"])))


def cpu_threads(library: str, torch_threads: int) -> dict[str, Any]:
    """A CPU figure's threads and the CPUs it may use: `threads` is the pool its work ran on (torch's, or numpy's
    BLAS), `ceiling` the threads it would have by default (the physical cores it may use, within a quota),
    `set_by` whatever set the pool where it can be found."""
    pools = blas_pools()
    names: tuple[str, ...]
    if library == "numpy" and pools:
        threads, pool = max(p["threads"] for p in pools), f"numpy's BLAS ({pools[0]['library']})"
        names, setter = BLAS_VARIABLES, BLAS_SETTER
    else:
        threads, pool, names, setter = torch_threads, "torch", TORCH_VARIABLES, TORCH_SETTER
    return _limits() | {
        "threads": threads,
        "pool": pool,
        "torch_threads": torch_threads,
        "blas": pools,
        "set_by": variable_setters(names) + start_up_setters(setter=setter),
    }


MATH_VARIABLES = ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE")


def gpu_math(
    allow_tf32: bool | None, precision: str | None, cudnn_tf32: bool | None, fp32_peak: float | None
) -> dict[str, Any]:
    """A GPU figure's math mode as torch's flags stood when it ran, the variables that override them, and the
    fp32 peak its rate is checked against (a tf32 figure at fp32's rate did not run as TF32)."""
    return {
        "allow_tf32": allow_tf32,
        "float32_matmul_precision": precision,
        "cudnn_allow_tf32": cudnn_tf32,
        "fp32_peak": fp32_peak,
        "variables": {name: os.environ[name] for name in MATH_VARIABLES if name in os.environ},
    }
