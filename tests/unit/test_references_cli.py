"""`rigcheck references`: the table for the GPUs present (a fake NVML with two H200s), or for every model with
`--all`, each figure with its source; `--baseline FILE` overrides the figures it holds; a bad file is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rigcheck.engine.exits import EXIT_USAGE
from rigcheck.engine.facts import present_gpus as present
from rigcheck.engine.measure.references import MODELS
from rigcheck.tui.cli import main


@pytest.fixture
def two_h200s(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fakes import build_fake_nvml
    from rigcheck.engine.hw import nvml

    monkeypatch.setattr(nvml, "LIBRARY", str(build_fake_nvml(tmp_path)))
    monkeypatch.setattr(present, "DRM_ROOT", tmp_path / "no-drm")


def test_the_gpus_present_are_listed_with_their_figures_and_sources(two_h200s: None, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["references"]) == 0
    out = capsys.readouterr().out
    assert out.count("H200 (this machine: NVIDIA H200) [nvidia]") == 2
    assert "best-bf16" in out and "794.5 TFLOP/s    80% of bf16" in out and "published MAMF, ml-engineering" in out
    assert "device copy (any size)" in out and "NVIDIA DCGM diag-skus.yaml" in out
    assert "\nsources:\n" in out and "commit b9e29720eebd4aa946fa9678975385efbc90a777" in out
    assert "A100" not in out  # only the models present
    # issue 40: each figure's expectation on each GPU, measured (its model's entry) or derived (its architecture)
    assert "expected on this GPU (132 units x 1980 MHz, sm_90):" in out
    assert "derived from 132 SMs x 1,830 MHz x 4,096 bf16 FLOP/clock (sm_90)" in out
    assert "matmul bf16 4096" in out and "792.1 TFLOP/s   measured    H200 rigcheck-measured, 3 runs" in out


def test_a_baseline_overrides_the_figures_it_holds(two_h200s: None, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    baseline = {
        "format": "rigcheck-baseline",
        "version": 1,
        "source": "rack 7, 2026-12-01",
        "figures": {"NVIDIA H200/best-bf16": {"value": 801.0, "unit": "TFLOP/s"}},
    }
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(baseline))
    assert main(["references", "--baseline", str(path)]) == 0
    out = capsys.readouterr().out
    assert "801 TFLOP/s" in out and "<- --baseline (overrides the table)" in out
    assert "794.5" not in out  # the table's figure it replaced


def test_all_lists_every_model_and_a_bad_baseline_is_one_line(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["references", "--all"]) == 0
    out = capsys.readouterr().out
    assert all(f"{m.key} [{m.vendor}]" in out for m in MODELS)
    assert "Radeon PRO W7900 [amd]" in out and "no reference figures: judged against datasheet peaks" in out
    assert main(["references", "--baseline", str(tmp_path / "missing.json")]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot read it" in err


def test_no_gpu_says_where_to_look(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from rigcheck.engine.hw import nvml

    monkeypatch.setattr(nvml, "LIBRARY", str(tmp_path / "absent.so"))
    monkeypatch.setattr(present, "DRM_ROOT", tmp_path / "no-drm")
    assert main(["references"]) == 0
    out = capsys.readouterr().out
    # issue 40: a CPU host's run judges its CPU figures, so it says against what, not "no GPU found"
    assert "no GPU found" not in out and "no GPU on this host (NVML, amdgpu)" in out
    assert "\nthis CPU: " in out and ("NOT JUDGED against a reference" in out or "measured" in out)


def test_a_cpu_host_whose_units_were_measured_shows_its_expected_figures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:  # type: ignore[no-untyped-def]
    from rigcheck.engine.hw import nvml
    from rigcheck.tui import cli_expected

    monkeypatch.setattr(nvml, "LIBRARY", str(tmp_path / "absent.so"))
    monkeypatch.setattr(present, "DRM_ROOT", tmp_path / "no-drm")
    xeon = {"model": "Intel(R) Xeon(R) Processor", "flags": ["avx2", "fma", "avx512f"], "machine": "x86_64"}
    monkeypatch.setattr(cli_expected, "cpu_facts", lambda: xeon | {"logical_cpus": 16, "max_mhz": 3150.0})
    assert main(["references"]) == 0
    out = capsys.readouterr().out
    assert "this CPU: Intel(R) Xeon(R) Processor (Intel AVX-512, 16 CPUs); its limit: 3,226 GFLOP/s fp32" in out
    assert "matmul fp32 1024" in out and "1,039 GFLOP/s  measured" in out  # 32% of 3,226, as the H200 host reached
    # a training entry in samples/s: 5,517 x 132.1 MFLOP = 23% of 3,225.6 GFLOP/s, back in samples/s on this host
    assert "train c64 b256 fp32" in out and "5,517 samples/s  measured   23% of the limit" in out


def test_an_endless_or_huge_baseline_is_one_line_not_a_memory_blowup(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """`--baseline /dev/zero` read until the memory ran out (the kernel killed it); now it reads a capped amount."""
    from rigcheck.engine.run import options

    assert main(["references", "--all", "--baseline", "/dev/zero"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/dev/zero" in err and "not a regular file" in err  # refused unread
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (options.BASELINE_FILE_MAX_BYTES + 1))
    assert main(["references", "--all", "--baseline", str(big)]) == EXIT_USAGE
    assert f"over the {options.BASELINE_FILE_MAX_BYTES:,} read" in capsys.readouterr().err
    big.write_bytes(b" " * options.BASELINE_FILE_MAX_BYTES)  # at the cap: read, and refused as not JSON instead
    assert main(["references", "--all", "--baseline", str(big)]) == EXIT_USAGE
    assert "not JSON" in capsys.readouterr().err


def test_a_gpu_the_table_does_not_list_shows_its_derived_expectations(monkeypatch: pytest.MonkeyPatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from rigcheck.engine.facts.present_gpus import PresentGpu
    from rigcheck.engine.measure.arch_peaks import DeviceProps
    from rigcheck.tui import cli_references

    bus = "0000:01:00.0"
    monkeypatch.setattr(cli_references, "present_gpus", lambda: [PresentGpu("NVIDIA L40S", bus, "0x26b9")])
    monkeypatch.setattr(
        cli_references, "nvidia_props", lambda: {bus: DeviceProps("NVIDIA L40S", "sm_89", 142, 2520, 9001, 384)}
    )
    monkeypatch.setattr(cli_references, "amd_props", lambda **_: {})
    assert main(["references"]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA L40S, 0000:01:00.0, PCI id 0x26b9: not in the table; expected from its architecture (Ada)" in out
    assert "bf16         366.4 TFLOP/s  derived from 142 SMs x 2,520 MHz x 1,024 bf16 FLOP/clock (sm_89)" in out
    assert "derived     Hopper share carried to Ada" in out
    assert "train c128 b8192 bf16" in out and "NOT JUDGED  no Ada model has a measured train" in out
