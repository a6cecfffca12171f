"""The build fits the GPU: each GPU's architecture against the torch build's arch list, and dtypes that
run only emulated or rate-limited said as such; each case beside a clean pass."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.events import Status
from rigcheck.engine.facts.arch_fit import arch_fit, cuda_fit, override_target, rocm_fit
from rigcheck.engine.facts.dtypes import slow_dtypes
from rigcheck.engine.stages.probe import build_fit_verdicts, verdicts

CU130 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]
CU126 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
ROCM = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1200"]


def test_a_p40_on_a_cuda_13_build_fails_naming_the_cuda_12_6_build() -> None:
    fit = cuda_fit(CU130, "Tesla P40", 6, 1)
    assert fit.status == Status.FAIL
    assert fit.explanation.startswith("Tesla P40 is sm_61, but this torch build has kernels only for sm_75, sm_80")
    assert "no kernel image is available" in fit.explanation
    assert "https://download.pytorch.org/whl/cu126" in fit.explanation and "cu118" in fit.explanation
    volta = cuda_fit(CU130, "Tesla V100-SXM2-32GB", 7, 0)
    assert volta.status == Status.FAIL and "cu126" in volta.explanation
    # the same P40 on a CUDA 12.6 build runs its sm_60 kernels: binary compatible within a major
    assert cuda_fit(CU126, "Tesla P40", 6, 1).status == Status.PASS


def test_an_h200_passes_and_a_newer_gpu_runs_on_ptx_with_a_jit_note() -> None:
    h200 = cuda_fit(CU130, "NVIDIA H200", 9, 0)
    assert (
        h200.status == Status.PASS
        and h200.explanation == "NVIDIA H200 (sm_90): this torch build has kernels for it (sm_90)"
    )
    ptx_only = ["sm_80", "sm_90", "compute_90"]
    newer = cuda_fit(ptx_only, "NVIDIA B200", 10, 0)
    assert newer.status == Status.PASS and "PTX (compute_90) that the driver JIT-compiles" in newer.explanation
    # without the PTX the same GPU fails, and is told to take a CUDA 12.8 or later build
    bare = cuda_fit(["sm_80", "sm_90"], "NVIDIA B200", 10, 0)
    assert bare.status == Status.FAIL and "CUDA 12.8 or later" in bare.explanation
    # arch-specific PTX and kernels (sm_90a) run on their own chip only
    assert cuda_fit(["sm_90a", "compute_90a"], "NVIDIA B200", 10, 0).status == Status.FAIL
    assert cuda_fit(["sm_90a"], "NVIDIA H100", 9, 0).status == Status.PASS


def test_gfx1151_on_a_rocm_build_without_it_fails_and_the_override_is_explained() -> None:
    fit = rocm_fit(ROCM, "AMD Radeon 8060S", "gfx1151", {})
    assert fit.status == Status.FAIL
    assert "gfx1151" in fit.explanation and "gfx1100" in fit.explanation  # the GPU and what the build has
    assert "install a ROCm build of torch that lists gfx1151" in fit.explanation
    assert "invalid device function" in fit.explanation
    # feature flags are not part of the target; a build that lists it passes
    assert rocm_fit([*ROCM, "gfx1151"], "AMD Radeon 8060S", "gfx1151:xnack-", {}).status == Status.PASS
    assert rocm_fit(["gfx11-generic"], "AMD Radeon 8060S", "gfx1151", {}).status == Status.PASS
    overridden = rocm_fit(ROCM, "AMD Radeon 8060S", "gfx1151", {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    assert overridden.status == Status.WARN
    assert "HSA_OVERRIDE_GFX_VERSION=11.0.0 makes ROCm run AMD Radeon 8060S (gfx1151) as gfx1100" in (
        overridden.explanation
    )
    assert "which this torch build has" in overridden.explanation and "unset HSA_OVERRIDE_GFX_VERSION" in (
        overridden.explanation
    )
    missing = rocm_fit(["gfx942"], "AMD Radeon 8060S", "gfx1151", {"HSA_OVERRIDE_GFX_VERSION": "11.0.0"})
    assert missing.status == Status.FAIL and "as gfx1100, which this torch build lacks (it has gfx942)" in (
        missing.explanation
    )
    assert override_target("9.0.10") == "gfx90a" and override_target("11.5.1") == "gfx1151"
    assert override_target("eleven") is None


def test_arch_fit_reads_probes_device_facts() -> None:
    p40 = {"name": "Tesla P40", "arch": "sm_61", "compute_capability": "6.1"}
    assert arch_fit("CUDA", CU130, p40, {}).status == Status.FAIL
    assert arch_fit("CUDA", CU126, p40, {}).status == Status.PASS
    assert arch_fit("CUDA", [], p40, {}).status == Status.SKIP
    amd = {"name": "AMD Instinct MI300X", "arch": "gfx942:sramecc+:xnack-", "compute_capability": "9.4"}
    assert arch_fit("ROCm", ROCM, amd, {}).status == Status.PASS


def test_emulated_and_rate_limited_dtypes_are_said() -> None:
    assert slow_dtypes("sm_61") == {
        "fp16": "fp16 runs at 1/64 of fp32 on sm_61",
        "bf16": "bf16 emulated: sm_61 has no native bf16 (it came with sm_80)",
    }
    assert slow_dtypes("sm_75") == {"bf16": "bf16 emulated: sm_75 has no native bf16 (it came with sm_80)"}
    assert slow_dtypes("gfx1030") == {"bf16": "bf16 emulated: gfx1030 has no bf16 matrix instructions"}
    assert slow_dtypes("sm_90") == {} and slow_dtypes("sm_100") == {} and slow_dtypes("gfx942:sramecc+") == {}


BUILD = {"torch": "2.9.0", "build": "CUDA", "num_threads": 8, "arch_list": CU130}
CPU = {"model": "x", "usable_cpus": 8, "logical_cpus": 8, "governor": "performance"}


def device(index: int, name: str, arch: str, capability: str, **extra: Any) -> dict[str, Any]:
    return {
        "index": index,
        "name": name,
        "arch": arch,
        "compute_capability": capability,
        "multiprocessors": 30,
        "multiprocessor_kind": "SMs",
        "memory_pool_bytes": 24 * 2**30,
        "memory_pool_source": "driver",
        "memory_torch_total": 24 * 2**30,
        "dtype_runs": {"fp32": "yes", "fp16": "yes", "bf16": "yes", "fp64": "yes"},
    } | extra


def test_probe_says_the_build_fit_for_every_gpu_and_notes_slow_dtypes() -> None:
    p40 = device(0, "Tesla P40", "sm_61", "6.1", slow_dtypes=slow_dtypes("sm_61"))
    h200 = device(1, "NVIDIA H200", "sm_90", "9.0", slow_dtypes={})
    fits = list(build_fit_verdicts(BUILD, [p40, h200], {}))
    assert [(v.check, v.status) for v in fits] == [("build-fit cuda:0", Status.FAIL), ("build-fit cuda:1", Status.PASS)]
    assert fits[0].explanation.startswith("cuda:0 Tesla P40 is sm_61") and fits[0].device == "cuda:0"
    assert p40["build_fit"]["status"] == "FAIL"
    out = {v.check: v for v in verdicts("cuda:0", BUILD, [p40, h200], None, CPU, {})}
    assert out["cuda:0"].status == Status.PASS
    assert "runs, but fp16 runs at 1/64 of fp32 on sm_61; bf16 emulated" in out["cuda:0"].explanation
    assert "runs, but" not in out["cuda:1"].explanation and out["cuda:1"].numbers["slow_dtypes"] == {}
    # a dtype that failed to run on a GPU without kernels points at the build's fit
    broken = p40 | {"dtype_runs": {"fp32": "no: CUDA error: no kernel image is available", "fp16": "yes"}}
    failed = {v.check: v for v in verdicts("cuda:0", BUILD, [broken], None, CPU, {})}["cuda:0"]
    assert failed.status == Status.WARN and "see build-fit" in failed.explanation


def test_a_dtype_that_fails_to_run_warns_naming_where_the_error_is_and_fp8_alone_does_not() -> None:
    h200 = device(0, "NVIDIA H200", "sm_90", "9.0", slow_dtypes={})
    clean = verdicts(
        "cuda:0", BUILD, [h200 | {"dtype_runs": h200["dtype_runs"] | {"fp8": "no: not built"}}], None, CPU, {}
    )
    assert {v.check: v.status for v in clean}["cuda:0"] == Status.PASS  # fp8 is optional: its absence is no fault
    broken = h200 | {"dtype_runs": h200["dtype_runs"] | {"bf16": "no: RuntimeError", "fp64": "no: RuntimeError"}}
    failed = {v.check: v for v in verdicts("cuda:0", BUILD, [broken], None, CPU, {})}["cuda:0"]
    assert failed.status == Status.WARN
    assert failed.explanation.endswith(
        "; these dtypes failed to run: bf16, fp64 (the error of each is in probe's facts: rigcheck export last)"
    )
