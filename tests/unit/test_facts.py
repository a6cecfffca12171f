"""Probe's readers, fed fake hardware: APU memory pools, driver absence, dtype tables, no-GPU reasons."""

from __future__ import annotations

from pathlib import Path

from rigcheck.engine.events import Status
from rigcheck.engine.facts.amd_driver import amd_cards, memory_pool
from rigcheck.engine.facts.dtypes import amd_matrix_dtypes, cpu_matrix_dtypes, nvidia_matrix_dtypes
from rigcheck.engine.facts.gpu_devices import join_amd, join_nvidia, why_no_gpu
from rigcheck.engine.facts.host import cpu_facts, result_changing_env
from rigcheck.engine.facts.nvidia_driver import nvidia_driver, proc_driver_version
from rigcheck.engine.facts.torch_build import dnn_version_text
from rigcheck.engine.stages.probe import verdicts

GIB = 2**30


def fake_card(root: Path, name: str, pci: str, vram: int, gtt: int, vendor: str = "0x1002") -> None:
    device = root / "devices" / pci
    device.mkdir(parents=True)
    (device / "vendor").write_text(vendor + "\n")
    (device / "mem_info_vram_total").write_text(f"{vram}\n")
    (device / "mem_info_gtt_total").write_text(f"{gtt}\n")
    (root / "drm" / name).mkdir(parents=True)
    (root / "drm" / name / "device").symlink_to(device)


def gpu(index: int = 0, **extra: object) -> dict:
    base = {"index": index, "pci": None, "uuid": None, "integrated": False, "memory_torch_total": 512 * 2**20}
    return base | extra


def test_apu_reports_the_gtt_pool_not_the_carveout(tmp_path: Path) -> None:
    fake_card(tmp_path, "card1", "0000:c5:00.0", 512 * 2**20, int(94.94 * GIB))
    fake_card(tmp_path, "card0", "0000:01:00.0", 8 * GIB, 8 * GIB, vendor="0x10de")  # not AMD
    (tmp_path / "drm" / "card1-DP-1").mkdir()
    cards = amd_cards(tmp_path / "drm")
    assert [c["card"] for c in cards] == ["card1"]
    device = join_amd(gpu(pci="0000:c5:00.0", integrated=True), tmp_path / "drm")
    assert device["memory_pool_bytes"] == int(94.94 * GIB)
    assert device["memory_pool_source"].startswith("GTT")
    assert "512 MiB VRAM carve-out is not its memory" in device["memory_note"]


def test_discrete_amd_card_reports_vram() -> None:
    pool = memory_pool({"vram_total": 192 * GIB, "gtt_total": 64 * GIB}, integrated=False)
    assert pool["pool_bytes"] == 192 * GIB and pool["pool_source"] == "VRAM"
    guessed = memory_pool({"vram_total": 512 * 2**20, "gtt_total": 64 * GIB}, integrated=None)
    assert guessed["pool_source"].startswith("GTT")


def test_nvidia_driver_memory_is_matched_by_uuid() -> None:
    driver = {
        "devices": [
            {"index": 0, "uuid": "GPU-aaaa", "memory_total": 1},
            {"index": 1, "uuid": "GPU-bbbb", "memory_total": 150_000_000_000},
        ]
    }
    device = join_nvidia(gpu(0, uuid="bbbb"), driver)
    assert device["memory_driver_total"] == 150_000_000_000 and device["driver_index"] == 1
    alone = join_nvidia(gpu(0), {})
    assert alone["memory_pool_source"] == "torch"


def test_missing_nvml_is_a_reason_not_an_error(tmp_path: Path) -> None:
    facts = nvidia_driver("libnvidia-ml-does-not-exist.so")
    assert facts["available"] is False and "not loadable" in facts["reason"]
    version_file = tmp_path / "version"
    version_file.write_text("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Oct  7 2025\n")
    assert proc_driver_version(version_file) == "580.159.04"
    assert proc_driver_version(tmp_path / "absent") is None


def test_why_no_gpu_names_the_cause(tmp_path: Path) -> None:
    assert "CPU-only build" in why_no_gpu("CPU-only", False, 0, {}, tmp_path)
    hidden = why_no_gpu("CUDA", False, 0, {"CUDA_VISIBLE_DEVICES": ""}, tmp_path)
    assert "hidden by CUDA_VISIBLE_DEVICES" in hidden
    assert "/dev/nvidia0 is missing" in why_no_gpu("CUDA", False, 0, {}, tmp_path)
    assert "/dev/kfd is missing" in why_no_gpu("ROCm", False, 0, {}, tmp_path)
    (tmp_path / "nvidia0").touch()
    assert "driver is present" in why_no_gpu("CUDA", False, 0, {}, tmp_path)
    assert why_no_gpu("CUDA", True, 1, {}, tmp_path) is None


def test_dnn_version_text() -> None:
    assert dnn_version_text(91900) == "9.19.0"
    assert dnn_version_text(8902) == "8.9.2"
    assert dnn_version_text(None) is None


def test_matrix_dtype_tables() -> None:
    assert nvidia_matrix_dtypes(9, 0) == ["fp16", "bf16", "tf32", "fp8"]
    assert nvidia_matrix_dtypes(7, 5) == ["fp16"]
    assert amd_matrix_dtypes("gfx942:sramecc+:xnack-") == ["fp16", "bf16", "tf32", "fp8", "fp64"]
    assert amd_matrix_dtypes("gfx1151") == ["fp16", "bf16"]
    assert amd_matrix_dtypes("gfx803") == []
    assert cpu_matrix_dtypes(["avx2", "amx_bf16"]) == ["fp32", "bf16"]


def test_cpu_facts_from_a_fake_proc(tmp_path: Path) -> None:
    block = (
        "processor\t: {n}\nmodel name\t: AMD RYZEN AI MAX+ 395\nphysical id\t: 0\n"
        "core id\t\t: {c}\nflags\t\t: avx2 fma avx512f avx512_bf16\n"
    )
    (tmp_path / "cpuinfo").write_text("\n".join(block.format(n=n, c=n // 2) for n in range(8)))
    (tmp_path / "cpu0" / "cpufreq").mkdir(parents=True)
    (tmp_path / "cpu0" / "cpufreq" / "scaling_governor").write_text("powersave\n")
    facts = cpu_facts(tmp_path / "cpuinfo", tmp_path)
    assert facts["model"] == "AMD RYZEN AI MAX+ 395"
    assert facts["physical_cores"] == 4
    assert facts["governor"] == "powersave"
    assert facts["flags"] == ["avx2", "fma", "avx512f", "avx512_bf16"]


def test_result_changing_env_keeps_only_what_matters() -> None:
    env = {
        "HOME": "/root",
        "HSA_OVERRIDE_GFX_VERSION": "11.0.0",
        "MIOPEN_FIND_MODE": "1",
        "OMP_NUM_THREADS": "4",
    }
    assert result_changing_env(env) == {
        "HSA_OVERRIDE_GFX_VERSION": "11.0.0",
        "MIOPEN_FIND_MODE": "1",
        "OMP_NUM_THREADS": "4",
    }


CPU = {"model": "x", "usable_cpus": 2, "logical_cpus": 2, "governor": "performance"}
BUILD = {"torch": "2.13.0", "num_threads": 2, "build": "CPU-only"}


def test_probe_verdicts_fail_when_the_asked_gpu_is_missing() -> None:
    out = {v.check: v for v in verdicts("cuda:0", BUILD, [], "this torch is a CPU-only build", CPU, {})}
    assert out["cpu"].status == Status.PASS
    assert out["gpu"].status == Status.FAIL
    on_cpu = {v.check: v for v in verdicts("cpu", BUILD, [], "this torch is a CPU-only build", CPU, {})}
    assert on_cpu["gpu"].status == Status.SKIP


def test_probe_verdicts_warn_on_risky_settings() -> None:
    cpu = CPU | {"governor": "powersave"}
    out = {v.check: v for v in verdicts("cpu", BUILD, [], None, cpu, {"LD_PRELOAD": "/x.so"})}
    assert out["environment"].status == Status.WARN and "LD_PRELOAD" in out["environment"].explanation
    assert out["cpu-governor"].status == Status.PASS  # a note (issue 41)
    clean = {v.check for v in verdicts("cpu", BUILD, [], None, CPU, {"OMP_NUM_THREADS": "4"})}
    assert clean == {"cpu"}
