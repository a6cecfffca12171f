"""engine/facts/settings.py at each edge (issue 45's mutation gaps): a thread count at 0, 1 and one below the
usable CPUs, torch's pool against the physical cores with no host count read, each switch's off values, a
stored setting read back, read_host()'s defaults (/proc, /sys and the CPU affinity) and what it does where the
affinity cannot be read, and the figure kinds of each stage and device."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import replace
from pathlib import Path

import pytest
from rigcheck.engine.facts import settings as table
from rigcheck.engine.facts.settings import HostSettings, InForce, affecting, figure_kinds, in_force, read_host

SIXTEEN = HostSettings(usable_cpus=16)


def named(env: dict[str, str], host: HostSettings = SIXTEEN) -> list[str]:
    return [f"{s.name}={s.value}" for s in in_force(env, host)]


@pytest.mark.parametrize(
    ("value", "found"),
    [("0", False), ("1", True), (" 2 ", True), ("15", True), ("16", False), ("-1", False), ("", False)],
)
def test_a_thread_count_is_a_narrowing_from_1_to_one_below_the_usable_cpus(value: str, found: bool) -> None:
    assert named({"MKL_NUM_THREADS": value}) == ([f"MKL_NUM_THREADS={value}"] if found else [])
    assert named({"MKL_NUM_THREADS": value}, HostSettings()) == []  # the usable CPUs unknown: nothing to be below


@pytest.mark.parametrize(
    ("host", "found"),
    [
        (HostSettings(usable_cpus=16, physical_cpus=8, torch_threads=7), True),
        (HostSettings(usable_cpus=16, physical_cpus=8, torch_threads=8), False),
        (HostSettings(usable_cpus=6, physical_cpus=8, torch_threads=5), True),  # the fewer usable CPUs
        (HostSettings(usable_cpus=6, physical_cpus=8, torch_threads=6), False),
        (HostSettings(usable_cpus=None, physical_cpus=8, torch_threads=7), True),
        (HostSettings(usable_cpus=16, physical_cpus=0, torch_threads=15), True),  # 0 physical: not read
        (HostSettings(torch_threads=999_999), True),  # no CPU count read: any sane pool is below the ceiling
        (HostSettings(torch_threads=1_000_000), False),
        (HostSettings(torch_threads=0), False),
    ],
)
def test_torch_threads_below_the_physical_cores_or_the_usable_cpus(host: HostSettings, found: bool) -> None:
    assert named({}, host) == ([f"torch threads={host.torch_threads}"] if found else [])


@pytest.mark.parametrize(
    ("value", "found"), [("1", True), ("yes", True), ("0", False), (" 0 ", False), ("", False), ("  ", False)]
)
def test_a_switch_is_on_unless_empty_or_0(value: str, found: bool) -> None:
    for name in ("CUDA_LAUNCH_BLOCKING", "NCCL_SHM_DISABLE", "PYTORCH_TUNABLEOP_ENABLED"):
        assert named({name: value}) == ([f"{name}={value}"] if found else [])
    numa = named({}, HostSettings(numa_balancing=value))
    assert numa == ([f"kernel.numa_balancing={value}"] if found else [])


@pytest.mark.parametrize(("value", "rule"), [("0", "off"), (" 0", "off"), ("1", "fp32"), ("2", "fp32"), ("", None)])
def test_the_tf32_override_by_its_value(value: str, rule: str | None) -> None:
    found = in_force({"NVIDIA_TF32_OVERRIDE": value}, HostSettings())
    if rule is None:
        assert found == []
    else:
        (setting,) = found
        assert setting.affects == ((table.GPU_TF32,) if rule == "off" else (table.GPU_FP32,))
        assert setting.slows is (rule == "off")


@pytest.mark.parametrize(
    ("governor", "found"),
    [("powersave", True), ("schedutil", True), ("performance", False), ("not exposed", False), ("", False)],
)
def test_every_governor_but_performance_is_named(governor: str, found: bool) -> None:
    assert named({}, HostSettings(governor=governor)) == ([f"CPU frequency governor={governor}"] if found else [])


def test_persistence_mode_names_the_gpus_where_it_is_off() -> None:
    (found,) = in_force({}, HostSettings(persistence_off=("GPU 0", "GPU 3")))
    assert (found.name, found.value, found.affects) == ("persistence mode", "off on GPU 0, GPU 3", (table.FIRST_CALL,))
    assert found.words() == (
        "persistence mode=off on GPU 0, GPU 3 (off: the driver lets go of the GPU when no process holds it, and the "
        "first call after pays its start-up again)"
    )
    assert in_force({"persistence mode": "off"}, HostSettings()) == []  # read from the driver, never the environment


def test_a_setting_whose_every_value_counts_is_named_whatever_its_value() -> None:
    assert named({"NCCL_ALGO": "0", "CUBLAS_WORKSPACE_CONFIG": ""}) == ["CUBLAS_WORKSPACE_CONFIG=", "NCCL_ALGO=0"]


def test_torch_threads_are_left_out_only_beside_omp_num_threads() -> None:
    host = HostSettings(usable_cpus=16, physical_cpus=8, torch_threads=2)
    assert named({"OMP_NUM_THREADS": "2"}, host) == ["OMP_NUM_THREADS=2"]
    assert named({"MKL_NUM_THREADS": "2"}, host) == ["MKL_NUM_THREADS=2", "torch threads=2"]
    assert named({"OMP_NUM_THREADS": "16"}, host) == ["torch threads=2"]  # OMP set, but at the usable CPUs
    later = {"OMP_NUM_THREADS": "2", "CUDA_LAUNCH_BLOCKING": "1"}  # the rules after torch threads are still read
    assert named(later, replace(host, governor="powersave")) == [
        "OMP_NUM_THREADS=2",
        "CUDA_LAUNCH_BLOCKING=1",
        "CPU frequency governor=powersave",
    ]


def test_a_stored_setting_reads_back_as_it_was_and_an_unknown_one_as_slowing() -> None:
    (setting,) = in_force({"NVIDIA_TF32_OVERRIDE": "1"}, HostSettings())
    stored = setting.as_dict()
    assert stored["affects"] == [table.GPU_FP32] and stored["slows"] is False
    assert InForce.from_dict(stored) == setting
    assert InForce.from_dict({}) == InForce("?", "", (), "", "", True)


def test_read_host_by_default_reads_proc_sys_and_the_cpus_this_process_may_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 45: read_host()'s default paths and the CPU affinity it reads were untested."""
    read: list[str] = []
    real = Path.read_text

    def read_text(path: Path, *args: object, **kwargs: object) -> str:
        read.append(str(path))
        if str(path) == "/proc/sys/kernel/numa_balancing":
            return "1\n"
        if str(path) == "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor":
            return " ondemand\n"
        return real(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", read_text)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5})
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    host = read_host()
    assert host == HostSettings(usable_cpus=3, governor="ondemand", numa_balancing="1")
    assert sorted(read) == ["/proc/sys/kernel/numa_balancing", "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"]


@pytest.mark.parametrize("failure", [OSError, AttributeError])
def test_read_host_counts_every_cpu_where_the_affinity_cannot_be_read(
    failure: type[Exception], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def refuse(pid: int) -> set[int]:
        raise failure("no affinity here")

    monkeypatch.setattr(os, "sched_getaffinity", refuse)
    monkeypatch.setattr(os, "cpu_count", lambda: 12)
    assert read_host(tmp_path, tmp_path) == HostSettings(usable_cpus=12)
    (tmp_path / "cpu0" / "cpufreq").mkdir(parents=True)
    (tmp_path / "cpu0" / "cpufreq" / "scaling_governor").mkdir()  # a folder where the file is: unreadable
    assert read_host(tmp_path, tmp_path).governor is None


@pytest.mark.parametrize(
    ("stage", "device", "params", "kinds"),
    [
        ("matmul", "cpu", {"dtype": "fp32"}, {table.CPU}),
        ("bandwidth", "cpu", {"bound": "link"}, {table.CPU, table.HOST_LINK}),
        ("bandwidth", "cuda:0", {"bound": "memory"}, {table.GPU}),
        ("bandwidth", "cuda:0", {"bound": "link"}, {table.GPU, table.HOST_LINK}),
        ("matmul", "cuda:0", {"dtype": "fp32"}, {table.GPU, table.GPU_BLAS, table.GPU_FP32}),
        ("matmul", "cuda:0", {"dtype": "tf32"}, {table.GPU, table.GPU_BLAS, table.GPU_TF32}),
        ("matmul", "cuda:0", {"dtype": "bf16"}, {table.GPU, table.GPU_BLAS}),
        ("training", "cuda:1", {"precision": "fp32"}, {table.GPU, table.GPU_BLAS, table.GPU_FP32, table.GPU_ALLOC}),
        ("verify", "cuda:0", {"dtype": "fp32"}, {table.GPU, table.GPU_ALLOC}),
        ("links", "cuda:0", {}, {table.GPU, table.LINKS}),
        ("no such stage", "cuda:0", {"dtype": "fp32"}, {table.GPU}),
        ("links", "rocm:0", {}, {table.CPU}),  # only a cuda device is a GPU here (ROCm's torch says cuda too)
    ],
)
def test_the_kinds_of_each_figure(stage: str, device: str, params: dict, kinds: set[str]) -> None:
    assert figure_kinds(stage, device, params) == kinds


def test_a_cpu_figure_read_back_from_json_is_still_a_host_link_copy() -> None:
    params = json.loads('{"bound": "link"}')  # a figure's params come back through the store or a child's event
    assert figure_kinds("bandwidth", "cpu", params) == {table.CPU, table.HOST_LINK}
    assert figure_kinds("bandwidth", "cuda:0", params) == {table.GPU, table.HOST_LINK}


def test_a_setting_in_force_is_a_value_that_cannot_change_once_read() -> None:
    (setting,) = in_force({"CUDA_LAUNCH_BLOCKING": "1"}, HostSettings())
    with pytest.raises(dataclasses.FrozenInstanceError):
        setting.value = "0"  # type: ignore[misc]
    (again,) = in_force({"CUDA_LAUNCH_BLOCKING": "1"}, HostSettings())
    assert len({setting, again}) == 1  # read twice, one setting


def test_a_figure_carries_a_setting_that_changes_any_one_of_its_kinds() -> None:
    settings = in_force({"CUDA_DEVICE_MAX_CONNECTIONS": "1", "NCCL_ALGO": "Ring"}, HostSettings())
    assert [s.name for s in affecting(settings, "links", "cuda:0", {})] == ["CUDA_DEVICE_MAX_CONNECTIONS", "NCCL_ALGO"]
    assert [s.name for s in affecting(settings, "matmul", "cuda:0", {"dtype": "bf16"})] == [
        "CUDA_DEVICE_MAX_CONNECTIONS"
    ]
    assert affecting(settings, "matmul", "cpu", {"dtype": "fp32"}) == []
