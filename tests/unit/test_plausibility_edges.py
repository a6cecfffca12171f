"""engine/measure/plausibility.py at the edges of its rules: a figure just inside and just outside its limit plus
the margin (1.1-2.1x the limit is impossible, not only 6x and 98x), the CPU's rates flag by flag (bf16 without AMX
or avx512_bf16 is twice fp32), the PCIe table by generation and by rate, and each cause's words and next step."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest
from rigcheck.engine.measure.plausibility import (
    COUNT_MISMATCH,
    IMPOSSIBLE,
    LIMIT_MARGIN,
    PCIE_GEN_GTS,
    PCIE_LANE_GBS,
    Cause,
    Limit,
    MathMode,
    cpu_matmul_limit,
    excess_cause,
    is_over_limit,
    over_limit,
    pcie_limit,
    timer_cause,
)

PLAIN = MathMode(env={}, allow_tf32=False, float32_precision="highest", cudnn_allow_tf32=False)


def test_the_margin_is_ten_percent_and_a_figure_past_it_is_impossible_at_any_ratio() -> None:
    assert LIMIT_MARGIN == 0.10 and IMPOSSIBLE == "impossible: "
    limit = 100.0
    assert over_limit(110.0, "TFLOP/s", limit, "peak") is None  # exactly the limit plus its margin
    assert over_limit(100.0, "TFLOP/s", limit, "peak") is None
    for ratio in (1.1001, 1.25, 1.5, 2.1):
        reason = over_limit(limit * ratio, "TFLOP/s", limit, "peak")
        assert reason is not None and is_over_limit(reason), ratio
    assert over_limit(121.0, "TFLOP/s", limit, "datasheet dense fp16 peak") == (
        "impossible: 121 TFLOP/s is 1.21x the limit of 100 (datasheet dense fp16 peak)"
    )
    assert over_limit(2345.678, "GB/s", 1000.0, "x") == "impossible: 2,346 GB/s is 2.35x the limit of 1,000 (x)"
    # a margin of the caller's own
    assert over_limit(104.0, "GB/s", limit, "peak", margin=0.05) is None
    assert over_limit(105.01, "GB/s", limit, "peak", margin=0.05) is not None
    assert over_limit(100.01, "GB/s", limit, "peak", margin=0.0) is not None
    # no limit known, or a zero one: nothing to judge by
    assert over_limit(1e9, "GB/s", None, "none") is None and over_limit(1e9, "GB/s", 0.0, "none") is None


def test_limits_and_causes_are_values_that_cannot_change_under_a_caller() -> None:
    limit, cause = Limit(63.0, "PCIe Gen5 x16"), Cause("a", "b")
    assert {limit, Limit(63.0, "PCIe Gen5 x16")} == {limit} and {cause, Cause("a", "b")} == {cause}
    with pytest.raises(FrozenInstanceError):
        limit.value = 1e9  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        cause.text = ""  # type: ignore[misc]


def test_only_an_over_limit_reason_is_one() -> None:
    assert is_over_limit("impossible: 2 GB/s is 2x the limit of 1 (x)") is True
    assert is_over_limit("two host clocks disagree by 40%") is False
    assert is_over_limit(None) is False and is_over_limit("") is False
    assert Limit(63.0, "PCIe Gen5 x16").as_params() == {"limit": 63.0, "limit_basis": "PCIe Gen5 x16"}


def test_the_pcie_tables_as_reviewed_and_a_rate_given_directly() -> None:
    assert PCIE_LANE_GBS == {2.5: 0.25, 5.0: 0.5, 8.0: 0.985, 16.0: 1.969, 32.0: 3.938, 64.0: 7.563}
    assert PCIE_GEN_GTS == {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
    by_rate = pcie_limit(None, 32.0, 8, "sysfs")
    assert by_rate == Limit(3.938 * 8, "PCIe 32 GT/s x8, one direction (sysfs)")
    by_gen = pcie_limit(4, None, 1, "NVML")
    assert by_gen == Limit(1.969, "PCIe Gen4 x1, one direction (NVML)")
    both = pcie_limit(3, 16.0, 4, "both")  # a rate read beats the generation's
    assert both is not None and both.value == pytest.approx(1.969 * 4) and "Gen3 x4" in both.basis
    assert pcie_limit(7, None, 16, "NVML") is None  # a generation the table lacks
    assert pcie_limit(5, None, 0, "NVML") is None and pcie_limit(5, None, None, "NVML") is None
    assert pcie_limit(None, 2.5, 1, "sysfs") == Limit(0.25, "PCIe 2.5 GT/s x1, one direction (sysfs)")
    assert pcie_limit(None, 128.0, 16, "sysfs").value == pytest.approx(7.563 * 16)  # type: ignore[union-attr]


def test_the_cpu_rate_flag_by_flag_and_bf16_without_its_instructions() -> None:
    def rate(flags: list[str], dtype: str = "fp32", machine: str = "x86_64") -> float:
        found = cpu_matmul_limit(1, 1000.0, flags, dtype, machine)
        assert found is not None
        return found.value

    assert rate(["avx512f", "fma", "avx2"]) == 64 and rate(["fma"]) == 32 and rate(["avx2"]) == 32
    assert rate([]) == 16 and rate(["sse4_2"]) == 16
    assert rate([], machine="aarch64") == 32 and rate(["avx512f"], machine="aarch64") == 64
    assert rate([], machine="") == 16 and rate([], machine="AMD64") == 16  # not read, or Windows' x86: not Arm
    # bf16: AMX tiles, else AVX-512 bf16, else twice the fp32 rate (converted to fp32 and run there, generously)
    assert rate(["avx512f", "amx_bf16", "avx512_bf16"], "bf16") == 2048
    assert rate(["avx512f", "avx512_bf16"], "bf16") == 128
    assert rate(["avx512f"], "bf16") == 128 and rate(["avx2", "fma"], "bf16") == 64 and rate([], "bf16") == 32
    assert rate(["amx_bf16"], "fp32") == 16  # AMX does not speed fp32
    found = cpu_matmul_limit(2, 2600.5, ["avx2"], "bf16")
    assert found is not None and found.value == pytest.approx(2 * 2.6005 * 64)
    assert found.basis == "2 CPUs x 2,600 MHz x 64 bf16 FLOP/cycle"
    assert cpu_matmul_limit(2, None, ["avx2"], "fp32") is None and cpu_matmul_limit(0, 3000.0, [], "fp32") is None
    assert cpu_matmul_limit(2, 0.0, [], "fp32") is None


def test_a_broken_timer_names_the_clock_to_check() -> None:
    host = timer_cause("two host clocks disagree by 40%", None)
    assert host.text == "two host clocks disagree by 40%: the timer is broken"
    assert host.next_step.startswith("check the host's clock source: cat /sys/devices/system/clocksource/")
    assert host.next_step.endswith("dmesg | grep -i clocksource")
    device = timer_cause("device events and the wall clock disagree", "impossible: 9 x")
    assert device.text == "device events and the wall clock disagree: the timer is broken (impossible: 9 x)"
    assert device.next_step.startswith("run the stage again alone on this GPU")


def test_fp32_overrides_in_the_environment_each_named_and_zero_or_empty_is_off() -> None:
    for name in ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"):
        found = excess_cause("fp32", 400.0, 66.9, MathMode(env={name: "1"}))
        assert found.text.startswith(f"fp32 ran as TF32: {name}=1 is set in the environment (")
        assert found.next_step == f"unset {name}"
        for off in ("0", "", " 0 ", "  "):
            assert excess_cause("fp32", 400.0, 66.9, MathMode(env={name: off})) == COUNT_MISMATCH, (name, off)
    # another dtype is not run as TF32 by them
    assert excess_cause("bf16", 4000.0, 989.4, MathMode(env={"NVIDIA_TF32_OVERRIDE": "1"})) == COUNT_MISMATCH


def test_torch_flags_in_order_and_cudnn_only_for_convolutions() -> None:
    high = excess_cause("fp32", 400.0, 66.9, MathMode(env={}, float32_precision="high", allow_tf32=True))
    assert high.text == "fp32 ran as TF32: torch.get_float32_matmul_precision() is 'high'"
    assert high.next_step == "call torch.set_float32_matmul_precision('highest') before measuring"
    medium = excess_cause("fp32", 400.0, 66.9, MathMode(env={}, float32_precision="medium"))
    assert medium.text == "fp32 ran as TF32 or bf16: torch.get_float32_matmul_precision() is 'medium'"
    tf32 = excess_cause("fp32", 400.0, 66.9, MathMode(env={}, float32_precision="highest", allow_tf32=True))
    assert tf32.text == "fp32 ran as TF32: torch.backends.cuda.matmul.allow_tf32 is True"
    assert tf32.next_step == "set torch.backends.cuda.matmul.allow_tf32 = False before measuring"
    cudnn = MathMode(env={}, cudnn_allow_tf32=True)
    assert excess_cause("fp32", 40.0, 19.5, cudnn) == COUNT_MISMATCH  # a matmul does not go through cuDNN
    conv = excess_cause("fp32", 40.0, 19.5, cudnn, uses_cudnn=True)
    assert conv.text.startswith("fp32 convolutions ran as TF32: torch.backends.cudnn.allow_tf32 is True")
    assert conv.next_step == "set torch.backends.cudnn.allow_tf32 = False before measuring"
    assert excess_cause("fp32", 40.0, 19.5, PLAIN, uses_cudnn=True) == COUNT_MISMATCH


def test_a_figure_that_fits_a_faster_dtypes_limit_is_that_dtype_on_both_sides_of_its_margin() -> None:
    faster = {"tf32": 494.7, "bf16": 989.4}
    at_tf32 = excess_cause("fp32", 494.7 * 1.1, 66.9, PLAIN, faster)
    assert at_tf32.text.startswith("fp32 ran as tf32: the figure fits the tf32 limit of 494.7, and no override")
    assert at_tf32.next_step == "look for what sets the math mode: env | grep -i -e tf32 -e precision -e blas"
    past_tf32 = excess_cause("fp32", 494.7 * 1.1 * 1.001, 66.9, PLAIN, faster)
    assert past_tf32.text.startswith("fp32 ran as bf16: the figure fits the bf16 limit of 989.4")
    assert excess_cause("fp32", 989.4 * 1.1 * 1.001, 66.9, PLAIN, faster) == COUNT_MISMATCH
    assert excess_cause("fp32", 400.0, 66.9, PLAIN, {"tf32": 0.0}) == COUNT_MISMATCH  # an unknown limit fits nothing
    assert excess_cause("fp32", 400.0, 66.9, PLAIN, {"tf32": 360.0}, margin=0.12).text.startswith("fp32 ran as tf32")
    assert excess_cause("fp32", 400.0, 66.9, PLAIN, {"tf32": 360.0}, margin=0.10) == COUNT_MISMATCH


def test_a_reduced_precision_reduction_explains_up_to_twice_the_limit_plus_margin() -> None:
    for dtype, mode in (
        ("fp16", MathMode(env={}, fp16_reduced_reduction=True)),
        ("bf16", MathMode(env={}, bf16_reduced_reduction=True)),
    ):
        edge = 989.4 * 2 * 1.1
        found = excess_cause(dtype, edge, 989.4, mode)
        flag = f"torch.backends.cuda.matmul.allow_{dtype}_reduced_precision_reduction"
        assert found.text == f"{dtype} may have reduced in {dtype} rather than fp32: {flag} is True"
        assert found.next_step == f"set {flag} = False and run again to rule it out"
        assert excess_cause(dtype, edge * 1.001, 989.4, mode) == COUNT_MISMATCH
    # the other half-precision flag says nothing of this dtype; fp32 and no dtype have no such flag
    assert excess_cause("fp16", 1500.0, 989.4, MathMode(env={}, bf16_reduced_reduction=True)) == COUNT_MISMATCH
    assert excess_cause("bf16", 1500.0, 989.4, MathMode(env={}, fp16_reduced_reduction=True)) == COUNT_MISMATCH
    both = MathMode(env={}, fp16_reduced_reduction=True, bf16_reduced_reduction=True)
    assert excess_cause(None, 1500.0, 989.4, both) == COUNT_MISMATCH
    assert excess_cause("fp32", 100.0, 66.9, both) == COUNT_MISMATCH
    assert excess_cause("bf16", 1500.0, 989.4, both, margin=0.0).text.startswith("bf16 may have reduced")
    assert excess_cause("bf16", 1980.0, 989.4, both, margin=0.0) == COUNT_MISMATCH
    assert COUNT_MISMATCH.text == "the FLOP or byte count does not match the work done"
    assert COUNT_MISMATCH.next_step == "report it as a rigcheck bug with this stage's log"
