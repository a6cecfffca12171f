"""Real-hardware checks, run on the GPU machine (`pytest -m hardware`); skipped where there is no GPU."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from rigcheck.engine.telemetry.sources import available_gpu_sources

pytestmark = pytest.mark.hardware
SOURCES, _ = available_gpu_sources()
needs_gpu = pytest.mark.skipif(not SOURCES, reason="no GPU telemetry source on this host")


@needs_gpu
def test_a_real_gpu_reads_sane_values() -> None:
    gpus = [gpu for source in SOURCES for gpu in source.read()]
    assert gpus
    for gpu in gpus:
        assert gpu.sm_clock_mhz is None or 100 <= gpu.sm_clock_mhz <= 4000
        assert gpu.temperature_c is None or 5 <= gpu.temperature_c <= 110
        assert gpu.power_w is None or 1 <= gpu.power_w <= 2000
        assert gpu.memory_total is None or gpu.memory_total > 2**30


@needs_gpu
@pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="no nvidia-smi")
def test_nvml_agrees_with_nvidia_smi() -> None:
    out = subprocess.run(
        ["nvidia-smi", "--query-gpu=memory.total,clocks.max.sm,memory.used", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()[0]
    total_mib, max_sm, used_mib = (float(x) for x in out.split(","))
    gpu = SOURCES[0].read()[0]
    assert abs(gpu.memory_total / 2**20 - total_mib) <= 1
    assert gpu.max_sm_clock_mhz == max_sm
    assert abs(gpu.memory_used / 2**20 - used_mib) <= 64


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


@pytest.mark.skipif(not _cuda_available(), reason="no CUDA device")
def test_memory_cycles_pass_clean_and_catch_a_leak(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from rigcheck.engine.events import Status
    from rigcheck.engine.stages.verify import memory as verify_memory

    device = torch.device("cuda:0")
    clean = {v.check: v for v in verify_memory.check_memory(device, 0.02, cycles=2)}
    assert clean["memory-cycles"].status == Status.PASS, clean["memory-cycles"].explanation
    kept: list[torch.Tensor] = []
    real = verify_memory.fill_and_check

    def leaky(device: torch.device, target: int) -> str | None:
        kept.append(torch.empty(2**28, device=device))  # a GiB that is never given back
        return real(device, target)

    monkeypatch.setattr(verify_memory, "fill_and_check", leaky)
    leaked = {v.check: v for v in verify_memory.check_memory(device, 0.02, cycles=2)}
    assert leaked["memory-cycles"].status == Status.FAIL and "not freed" in leaked["memory-cycles"].explanation
