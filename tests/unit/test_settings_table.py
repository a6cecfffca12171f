"""The settings table: each setting in force, and only when set in a way that changes figures, is named with the
figures it changes; probe warns of it; the annotator puts it in the affected figures' conditions only."""

from __future__ import annotations

from pathlib import Path

import pytest
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.facts import settings as table
from rigcheck.engine.facts.settings import HostSettings, affecting, figure_kinds, in_force, read_host
from rigcheck.engine.stages.probe import host_settings, verdicts

HOST = HostSettings(usable_cpus=16, physical_cpus=8, torch_threads=8, governor="performance", numa_balancing="0")


def names(env: dict[str, str], host: HostSettings = HOST) -> list[str]:
    return [f"{s.name}={s.value}" for s in in_force(env, host)]


def test_every_setting_the_issue_lists_is_in_the_table() -> None:
    wanted = {
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "torch threads",
        "NVIDIA_TF32_OVERRIDE",
        "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
        "CUDA_LAUNCH_BLOCKING",
        "PYTORCH_NO_CUDA_MEMORY_CACHING",
        "PYTORCH_CUDA_ALLOC_CONF",
        "CUBLAS_WORKSPACE_CONFIG",
        "CUDA_DEVICE_MAX_CONNECTIONS",
        "NCCL_P2P_DISABLE",
        "NCCL_SHM_DISABLE",
        "NCCL_ALGO",
        "NCCL_PROTO",
        "HSA_OVERRIDE_GFX_VERSION",
        "PYTORCH_TUNABLEOP_ENABLED",
        "kernel.numa_balancing",
        "CPU frequency governor",
        "persistence mode",
    }
    assert wanted <= {rule.name for rule in table.SETTINGS}
    assert all(rule.affects and rule.effect and rule.next_step for rule in table.SETTINGS)


@pytest.mark.parametrize(
    ("env", "found"),
    [
        ({"OMP_NUM_THREADS": "1"}, ["OMP_NUM_THREADS=1"]),
        ({"OMP_NUM_THREADS": "15"}, ["OMP_NUM_THREADS=15"]),  # one below the usable CPUs
        ({"OMP_NUM_THREADS": "16"}, []),  # at the usable CPUs: changes nothing
        ({"OMP_NUM_THREADS": "64"}, []),
        ({"OMP_NUM_THREADS": "lots"}, []),
        ({"MKL_NUM_THREADS": "2"}, ["MKL_NUM_THREADS=2"]),
        ({"NVIDIA_TF32_OVERRIDE": "0"}, ["NVIDIA_TF32_OVERRIDE=0"]),
        ({"NVIDIA_TF32_OVERRIDE": "1"}, ["NVIDIA_TF32_OVERRIDE=1"]),
        ({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "0"}, []),
        ({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"}, ["TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1"]),
        ({"CUDA_LAUNCH_BLOCKING": "0"}, []),
        ({"CUDA_LAUNCH_BLOCKING": "1"}, ["CUDA_LAUNCH_BLOCKING=1"]),
        ({"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, ["PYTORCH_NO_CUDA_MEMORY_CACHING=1"]),
        ({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}, ["PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"]),
        ({"NCCL_P2P_DISABLE": "1", "NCCL_ALGO": "Tree"}, ["NCCL_P2P_DISABLE=1", "NCCL_ALGO=Tree"]),
        ({"PATH": "/usr/bin", "HOME": "/root"}, []),
    ],
)
def test_a_setting_is_in_force_only_set_in_a_way_that_changes_figures(env: dict[str, str], found: list[str]) -> None:
    assert names(env) == found


def test_the_two_tf32_overrides_change_opposite_figures() -> None:
    (off,) = in_force({"NVIDIA_TF32_OVERRIDE": "0"}, HOST)
    (on,) = in_force({"NVIDIA_TF32_OVERRIDE": "1"}, HOST)
    assert off.affects == (table.GPU_TF32,) and off.slows
    assert on.affects == (table.GPU_FP32,) and not on.slows


def test_host_settings_torch_threads_governor_numa_and_persistence() -> None:
    assert names({}, HOST) == []
    assert names({}, HostSettings(usable_cpus=16, physical_cpus=8, torch_threads=7)) == ["torch threads=7"]
    assert names({}, HostSettings(usable_cpus=16, physical_cpus=8, torch_threads=8)) == []  # torch's default
    assert names({}, HostSettings(usable_cpus=4, physical_cpus=8, torch_threads=4)) == []  # a narrower CPU set
    assert names({}, HostSettings(governor="powersave")) == ["CPU frequency governor=powersave"]
    assert names({}, HostSettings(governor="not exposed")) == []
    assert names({}, HostSettings(numa_balancing="1")) == ["kernel.numa_balancing=1"]
    assert names({}, HostSettings(numa_balancing="0")) == []
    assert names({}, HostSettings(persistence_off=("cuda:0",))) == ["persistence mode=off on cuda:0"]
    narrowed = HostSettings(usable_cpus=16, physical_cpus=8, torch_threads=1)
    assert names({"OMP_NUM_THREADS": "1"}, narrowed) == ["OMP_NUM_THREADS=1"]  # one narrowing, named once


def test_read_host_reads_numa_and_the_governor(tmp_path: Path) -> None:
    (tmp_path / "sys" / "kernel").mkdir(parents=True)
    (tmp_path / "sys" / "kernel" / "numa_balancing").write_text("1\n")
    (tmp_path / "cpu0" / "cpufreq").mkdir(parents=True)
    (tmp_path / "cpu0" / "cpufreq" / "scaling_governor").write_text("powersave\n")
    host = read_host(tmp_path, tmp_path)
    assert (host.numa_balancing, host.governor) == ("1", "powersave") and host.usable_cpus
    bare = read_host(tmp_path / "none", tmp_path / "none")
    assert bare.numa_balancing is None and bare.governor is None


def test_each_figure_carries_only_the_settings_that_change_it() -> None:
    settings = in_force(
        {"OMP_NUM_THREADS": "1", "NVIDIA_TF32_OVERRIDE": "0", "PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, HOST
    )

    def of(stage: str, device: str, **params: object) -> list[str]:
        return [s.name for s in affecting(settings, stage, device, params)]

    assert of("matmul", "cpu", dtype="fp32") == ["OMP_NUM_THREADS"]
    assert of("matmul", "cuda:0", dtype="tf32") == ["NVIDIA_TF32_OVERRIDE"]
    assert of("matmul", "cuda:0", dtype="bf16") == []
    assert of("training", "cuda:0", precision="fp32") == ["PYTORCH_NO_CUDA_MEMORY_CACHING"]
    assert of("bandwidth", "cuda:0", bound="memory") == []
    assert table.LINKS in figure_kinds("links", "cuda:0", {}) and table.HOST_LINK in figure_kinds(
        "bandwidth", "cuda:0", {"bound": "link"}
    )


def test_the_annotator_puts_them_in_conditions_and_judge_notes_them() -> None:
    from rigcheck.engine.trust.conditions import ConditionsAnnotator

    class NoSamples:
        interval = 0.0

        def window(self, start: float, end: float) -> list:  # type: ignore[type-arg]
            return []

    settings = in_force({"CUDA_LAUNCH_BLOCKING": "1"}, HOST)
    annotate = ConditionsAnnotator(NoSamples(), settings=settings)
    gpu = annotate(Measurement("matmul", "matmul bf16 4096", 700.0, "TFLOP/s", device="cuda:0", params={}))
    cpu = annotate(Measurement("matmul", "matmul fp32 512", 900.0, "GFLOP/s", device="cpu", params={}))
    assert [s["name"] for s in gpu.conditions["settings"]] == ["CUDA_LAUNCH_BLOCKING"]
    assert any(n.startswith("CUDA_LAUNCH_BLOCKING=1 is set") for n in gpu.conditions["notes"])
    assert "settings" not in cpu.conditions
    assert ConditionsAnnotator(NoSamples(), settings=[]).settings == []


def test_probe_notes_each_setting_in_force_naming_the_figures_it_can_change() -> None:
    """Issue 41: a setting is a note in probe (a WARN on the old code); a figure it changed names it as its cause."""
    build = {"torch": "2.13.0", "num_threads": 16, "build": "CUDA"}
    cpu = {"model": "x", "usable_cpus": 16, "logical_cpus": 16, "governor": "performance", "physical_cores": 16}
    env = {"OMP_NUM_THREADS": "1", "PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "LD_PRELOAD": "/x.so"}
    out = {v.check: v for v in verdicts("cpu", build, [], None, cpu, env, host_settings(build, cpu))}
    omp = out["setting OMP_NUM_THREADS"]
    assert omp.status == Status.PASS and "can change CPU figures" in omp.explanation and "998 to 157" in omp.explanation
    caching = out["setting PYTORCH_NO_CUDA_MEMORY_CACHING"]
    assert caching.status == Status.PASS and "GPU training" in caching.explanation
    assert omp.explanation.startswith("note: ") and omp.numbers["note"]
    assert "LD_PRELOAD" in out["environment"].explanation  # not in the table: the older warning says it
    quiet = {v.check for v in verdicts("cpu", build, [], None, cpu, {}, host_settings(build, cpu))}
    assert quiet == {"cpu"}


def test_probe_reads_persistence_mode_off_from_the_driver_facts() -> None:
    build = {"torch": "2.13.0", "num_threads": 16, "build": "CUDA"}
    cpu = {"model": "x", "usable_cpus": 16, "logical_cpus": 16, "governor": "performance", "physical_cores": 16}
    devices = [{"index": 0, "persistence": 0}, {"index": 1, "persistence": 1}, {"index": 2, "persistence": None}]
    out = {v.check: v for v in verdicts("cpu", build, [], None, cpu, {}, host_settings(build, cpu, "0", devices))}
    persistence = out["setting persistence mode"]
    assert (
        persistence.status == Status.PASS
        and "off on GPU 0 is set and can change first-call latency" in persistence.explanation
    )
    on = host_settings(build, cpu, "0", devices[1:])
    assert "setting persistence mode" not in {v.check for v in verdicts("cpu", build, [], None, cpu, {}, on)}


def test_probe_says_one_thread_not_one_threads() -> None:
    cpu = {"model": "x", "usable_cpus": 2, "logical_cpus": 2, "governor": "performance", "physical_cores": 2}
    for threads, said in ((1, "with 1 thread"), (2, "with 2 threads")):
        build = {"torch": "2.13.0", "num_threads": threads, "build": "CPU"}
        out = {v.check: v for v in verdicts("cpu", build, [], None, cpu, {}, host_settings(build, cpu))}
        assert out["cpu"].explanation.endswith(said)
