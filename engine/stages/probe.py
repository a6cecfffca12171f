"""Probe: what is installed and visible, and whether the asked-for device can be used at all."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Iterator
from typing import Any

from rigcheck.engine.events import Event, Facts, Progress, Status, Verdict
from rigcheck.engine.facts.arch_fit import arch_fit
from rigcheck.engine.facts.driver import driver_facts
from rigcheck.engine.facts.dtypes import cpu_matrix_dtypes
from rigcheck.engine.facts.gpu_devices import join_amd, join_nvidia, torch_device, why_no_gpu
from rigcheck.engine.facts.host import RISKY_VARS, cpu_facts, result_changing_env
from rigcheck.engine.facts.settings import SETTINGS, HostSettings, in_force, read_host
from rigcheck.engine.facts.torch_build import build_facts, loaded_blas
from rigcheck.engine.stage import StageContext
from rigcheck.engine.stages.common.fp8 import find_fp8

STAGE = "probe"


def dtype_runs(torch: Any, device: str) -> dict[str, str]:
    """Run a tiny matrix multiply in each dtype on the device: 'yes', or the error it raised."""
    results: dict[str, str] = {}
    for name, dtype in (
        ("fp32", torch.float32),
        ("fp16", torch.float16),
        ("bf16", torch.bfloat16),
        ("fp64", torch.float64),
    ):
        try:
            a = torch.randn(64, 64, device=device, dtype=dtype)
            (a @ a).sum().item()
            results[name] = "yes"
        except Exception as error:
            results[name] = f"no: {str(error).splitlines()[0][:120]}"
    if device != "cpu":
        results["fp8"] = _fp8_runs(torch, device)
    return results


def _fp8_runs(torch: Any, device: str) -> str:
    dtype, detail = find_fp8(torch, device)
    return f"yes ({detail})" if dtype is not None else f"no: {detail}"


def _gib(value: Any) -> str:
    return f"{value / 2**30:.2f} GiB" if isinstance(value, int | float) else "n/a"


def describe_device(device: dict[str, Any]) -> str:
    return (
        f"{device['name']} ({device['arch']}, {device['multiprocessors']} "
        f"{device['multiprocessor_kind']}, memory {_gib(device['memory_pool_bytes'])} "
        f"from {device['memory_pool_source']}; torch says {_gib(device['memory_torch_total'])})"
    )


def run(context: StageContext) -> Iterator[Event]:
    import torch

    spec = context.spec
    yield Progress(STAGE, 1, 5, "torch build")
    build = build_facts(torch)
    driver = driver_facts(torch)
    yield Progress(STAGE, 2, 5, "devices")
    available = torch.cuda.is_available()
    count = torch.cuda.device_count() if available else 0
    devices = []
    for index in range(count):
        device = torch_device(torch, index)
        if build["build"] == "ROCm":
            devices.append(join_amd(device))
        else:
            devices.append(join_nvidia(device, driver.get("nvml") or {}))
    no_gpu = why_no_gpu(build["build"], available, count)
    # first, before anything runs on the GPUs: a build without their kernels fails every later stage
    yield from build_fit_verdicts(build, devices, dict(os.environ))
    yield Progress(STAGE, 3, 5, "dtypes")
    cpu = cpu_facts()
    cpu["matrix_dtypes"] = cpu_matrix_dtypes(cpu["flags"])
    cpu["dtype_runs"] = dtype_runs(torch, "cpu")
    for device in devices:
        device["dtype_runs"] = dtype_runs(torch, f"cuda:{device['index']}")
    yield Progress(STAGE, 4, 5, "BLAS")
    import numpy  # loaded so threadpoolctl sees numpy's BLAS beside torch's

    env = result_changing_env() | {k: v for k, v in os.environ.items() if k in {r.name for r in SETTINGS}}
    facts = {
        "interpreter": {
            "executable": sys.executable,
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
        },
        "torch": build,
        "numpy": numpy.__version__,
        "driver": driver,
        "devices": devices,
        "no_gpu_reason": no_gpu,
        "cpu": cpu,
        "blas": loaded_blas(),
        "environment": env,
    }
    yield Facts(STAGE, facts)
    yield Progress(STAGE, 5, 5, "verdicts")
    yield build_verdict(build, driver)
    host = host_settings(build, cpu, read_host().numa_balancing, (driver.get("nvml") or {}).get("devices"))
    yield from verdicts(spec.device, build, devices, no_gpu, cpu, env, host)


def build_fit_verdicts(build: dict[str, Any], devices: list[dict[str, Any]], env: dict[str, str]) -> Iterator[Verdict]:
    """Each GPU's architecture against the build's arch list; the fit is kept in the device's facts too."""
    for device in devices:
        fit = arch_fit(build["build"], build.get("arch_list") or [], device, env)
        device["build_fit"] = {"status": fit.status.value, "explanation": fit.explanation}
        label = f"cuda:{device['index']}"
        yield Verdict(
            STAGE,
            f"build-fit {label}",
            fit.status,
            f"{label} {fit.explanation}",
            {"arch": device.get("arch"), "arch_list": build.get("arch_list") or []},
            device=label,
        )


def build_verdict(build: dict[str, Any], driver: dict[str, Any]) -> Verdict:
    parts = [f"torch {build['torch']} ({build['build']} build)"]
    if build["cuda"] or build["hip"]:
        parts.append(f"CUDA {build['cuda']}" if build["cuda"] else f"HIP {build['hip']}")
    if build["dnn_version_text"]:
        parts.append(f"{build['dnn_library']} {build['dnn_version_text']}")
    if driver.get("version"):
        parts.append(f"driver {driver['version']}")
    parts.append(f"CPU BLAS {build['blas_info']}")
    return Verdict(
        STAGE,
        "build",
        Status.PASS,
        ", ".join(parts),
        {k: build[k] for k in ("torch", "cuda", "hip", "dnn_version")} | {"driver": driver.get("version")},
    )


def _failed_next(device: dict[str, Any]) -> str:
    """The next step after dtypes that failed to run: the build's fit where it is wrong, else the error."""
    fit = device.get("build_fit") or {}
    if fit.get("status") == Status.FAIL.value:
        return " (the build has no kernels for this GPU: see build-fit)"
    return " (the error of each is in probe's facts: rigcheck export last)"


def verdicts(
    asked: str,
    build: dict[str, Any],
    devices: list[dict[str, Any]],
    no_gpu: str | None,
    cpu: dict[str, Any],
    env: dict[str, str],
    host: HostSettings | None = None,
) -> Iterator[Verdict]:
    """Turn the facts into verdicts: the CPU, each GPU, the asked-for device, risky settings and the settings
    in force that change figures (`host`: the host's side of them, by default from the facts)."""
    yield Verdict(
        STAGE,
        "cpu",
        Status.PASS,
        f"CPU usable: {cpu['model']}, {cpu['usable_cpus']} of {cpu['logical_cpus']} CPUs, "
        f"torch {build['torch']} with {build['num_threads']} thread{'s' * (build['num_threads'] != 1)}",
        {"usable_cpus": cpu["usable_cpus"], "torch_threads": build["num_threads"]},
        device="cpu",
    )
    for device in devices:
        failed = {k: v for k, v in device["dtype_runs"].items() if k != "fp8" and v != "yes"}
        slow = {k: v for k, v in (device.get("slow_dtypes") or {}).items() if k not in failed}
        yield Verdict(
            STAGE,
            f"cuda:{device['index']}",
            Status.WARN if failed else Status.PASS,
            describe_device(device)
            + (f"; these dtypes failed to run: {', '.join(failed)}" + _failed_next(device) if failed else "")
            + (
                f"; runs, but {'; '.join(slow.values())}: its matrix multiplies reach at most the fp32 rate"
                if slow
                else ""
            ),
            {k: device.get(k) for k in ("memory_pool_bytes", "memory_torch_total", "arch")} | {"slow_dtypes": slow},
            device=f"cuda:{device['index']}",
        )
    if no_gpu:
        wants_gpu = asked.startswith("cuda")
        yield Verdict(
            STAGE,
            "gpu",
            Status.FAIL if wants_gpu else Status.SKIP,
            f"no usable GPU: {no_gpu}",
            {"build": build["build"]},
            device=asked,
        )
    elif asked.startswith("cuda:") and int(asked.split(":")[1]) >= len(devices):
        yield Verdict(
            STAGE,
            "gpu",
            Status.FAIL,
            f"{asked} was asked for but torch sees {len(devices)} GPU(s)",
            {"visible": len(devices)},
            device=asked,
        )
    table = {rule.name for rule in SETTINGS}
    risky = {k: RISKY_VARS[k] for k in env if k in RISKY_VARS and k not in table}  # the table's say more, below
    if risky:
        yield Verdict(
            STAGE,
            "environment",
            Status.WARN,
            "; ".join(f"{k}={env[k]!r} {why}" for k, why in risky.items()),
            {"variables": list(risky)},
        )
    yield from setting_verdicts(env, host or host_settings(build, cpu))


def host_settings(
    build: dict[str, Any],
    cpu: dict[str, Any],
    numa_balancing: str | None = None,
    driver_devices: list[dict[str, Any]] | None = None,
) -> HostSettings:
    """The host's side of the settings table, from probe's own facts (the driver's GPUs for persistence mode)."""
    off = tuple(f"GPU {d.get('index')}" for d in driver_devices or [] if d.get("persistence") == 0)
    return HostSettings(
        usable_cpus=cpu.get("usable_cpus"),
        physical_cpus=cpu.get("physical_cores"),
        torch_threads=build.get("num_threads"),
        governor=cpu.get("governor"),
        numa_balancing=numa_balancing,
        persistence_off=off,
    )


def setting_verdicts(env: dict[str, str], host: HostSettings) -> Iterator[Verdict]:
    """A note (PASS) for each setting in force that can change figures, naming which (engine/facts/settings.py):
    a setting is a WARN only where it changed a figure, and then on that figure, named as its cause (issue 41)."""
    for setting in in_force(env, host):
        check = "cpu-governor" if setting.name == "CPU frequency governor" else f"setting {setting.name}"
        yield Verdict(
            STAGE,
            check,
            Status.PASS,
            f"note: {setting.name}={setting.value} is set and can change {', '.join(setting.affects)}: "
            f"{setting.effect}; it is named as a figure's cause only where that figure is off its expectation "
            f"in the direction it explains; to compare: {setting.next_step}",
            {"setting": setting.as_dict(), "note": True},
            device="cpu" if setting.affects == ("CPU figures",) else "",
        )
