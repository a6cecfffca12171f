"""The words and edges of engine/trust/mechanism.py (issue 45's mutation scoring): the exact sentence a thread
limit and a math mode are named in, each threshold with a figure on each side of it, and which settings of the
table are named beside a figure's mechanism. Every expected value here is worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.events import Measurement
from rigcheck.engine.facts.settings import InForce
from rigcheck.engine.trust import mechanism


def cpu(value: float, **mech: Any) -> Measurement:
    params = {"dtype": "fp32", "mechanism": mech} if mech else {"dtype": "fp32"}
    return Measurement("matmul", "matmul fp32 512", value, "GFLOP/s", 0.07, 10, "cpu", params, {})


def gpu(value: float, dtype: str, **mode: Any) -> Measurement:
    params: dict[str, Any] = {"dtype": dtype, "math_mode": mode}
    return Measurement("matmul", f"matmul {dtype} 4096", value, "TFLOP/s", 0.5, 20, "cuda:0", params, {})


def setting(name: str, slows: bool) -> InForce:
    return InForce(name, "1", ("matmul",), f"{name} effect", f"unset {name}", slows)


# -- the thread count --


def test_a_variable_names_the_threads_and_the_ceiling_in_its_next_step() -> None:
    found = mechanism.threads(cpu(150.0, threads=1, ceiling=16, set_by=["OPENBLAS_NUM_THREADS=1"]), 762.0)
    assert found == (
        "the thread count: it ran on 1 thread(s) of torch where it may use 16 CPU(s); OPENBLAS_NUM_THREADS=1 set them",
        "unset OPENBLAS_NUM_THREADS, or set it to 16, and run again",
    )


def test_the_first_setter_found_is_the_one_named() -> None:
    found = mechanism.threads(cpu(150.0, threads=2, ceiling=8, set_by=["MKL_NUM_THREADS=2", "OMP_NUM_THREADS=4"]), 0)
    assert found is not None and found[0].endswith("; MKL_NUM_THREADS=2 set them")
    assert found[1] == "unset MKL_NUM_THREADS, or set it to 8, and run again"


def test_a_call_in_a_file_is_named_as_the_call_not_as_a_variable() -> None:
    site = "torch.set_num_threads(n=1) in /opt/sitecustomize.py line 2"
    found = mechanism.threads(cpu(150.0, threads=1, ceiling=4, pool="numpy", set_by=[site]), 700.0)
    assert found == (
        f"the thread count: it ran on 1 thread(s) of numpy where it may use 4 CPU(s); set by {site}",
        f"remove that call ({site}), or run with `python -s`, and run again",
    )


def test_no_setter_found_names_the_pool_and_the_count() -> None:
    found = mechanism.threads(cpu(150.0, threads=3, ceiling=4, pool="numpy"), None)
    assert found is not None
    assert found[0].endswith("; something in this interpreter set numpy's threads to 3")
    assert found[1].startswith("look for a call to torch.set_num_threads")


def test_a_quota_is_named_with_its_cpus() -> None:
    found = mechanism.threads(cpu(150.0, threads=1, ceiling=2, quota_cpus=2.5, set_by=["OMP_NUM_THREADS=1"]), None)
    assert found is not None
    assert found[0] == (
        "the thread count: it ran on 1 thread(s) of torch where it may use 2 CPU(s) within a quota of 2.5; "
        "OMP_NUM_THREADS=1 set them"
    )
    plain = mechanism.threads(cpu(150.0, threads=1, ceiling=2, quota_cpus=0), None)
    assert plain is not None and "quota" not in plain[0]


def test_a_figure_with_no_expectation_on_fewer_threads_is_named() -> None:
    assert mechanism.threads(cpu(900.0, threads=1, ceiling=16), None) is not None
    assert mechanism.threads(cpu(900.0, threads=1, ceiling=16), 0.0) is not None


@pytest.mark.parametrize(("value", "named"), [(899.9, True), (900.0, False)])
def test_a_thread_limit_is_named_only_more_than_a_tenth_below_its_expectation(value: float, named: bool) -> None:
    assert (mechanism.threads(cpu(value, threads=1, ceiling=16), 1000.0) is not None) == named


@pytest.mark.parametrize(
    "mech",
    [
        {"threads": 0, "ceiling": 16},
        {"threads": None, "ceiling": 16},
        {"threads": 4, "ceiling": 0},
        {"threads": 4, "ceiling": None},
        {"threads": 4},
        {"threads": 17, "ceiling": 16},
        {"threads": 16, "ceiling": 16},
    ],
)
def test_no_thread_count_or_no_ceiling_or_all_of_them_is_no_cause(mech: dict[str, Any]) -> None:
    assert mechanism.threads(cpu(100.0, **mech), 1000.0) is None


def test_a_figure_with_no_mechanism_is_no_cause() -> None:
    assert mechanism.threads(cpu(100.0), 1000.0) is None
    odd = Measurement("matmul", "m", 100.0, "GFLOP/s", 0.1, 3, "cpu", {"mechanism": "1 thread"}, {})
    assert mechanism.threads(odd, 1000.0) is None
    assert mechanism.read(odd, 1000.0) is None


# -- the math mode --


@pytest.mark.parametrize(("value", "named"), [(80.28, True), (80.3, False), (100.0, False)])
def test_tf32_is_at_the_fp32_rate_up_to_one_point_two_of_its_peak(value: float, named: bool) -> None:
    """66.9 x 1.2 = 80.28."""
    assert (mechanism.math_mode(gpu(value, "tf32", fp32_peak=66.9)) is not None) == named


@pytest.mark.parametrize(("value", "named"), [(73.59, False), (73.6, True), (80.0, True)])
def test_fp32_ran_as_tf32_above_one_point_one_of_its_peak(value: float, named: bool) -> None:
    """66.9 x 1.1 = 73.59."""
    assert (mechanism.math_mode(gpu(value, "fp32", fp32_peak=66.9)) is not None) == named


def test_tf32_at_the_fp32_rate_names_what_kept_it_off() -> None:
    mode = {"fp32_peak": 66.9, "allow_tf32": False, "variables": {"NVIDIA_TF32_OVERRIDE": " 0 ", "OTHER": "1"}}
    found = mechanism.math_mode(gpu(49.9, "tf32", **mode))
    assert found == (
        "tf32 ran at the fp32 rate (49.9 TFLOP/s, fp32's peak 66.9): NVIDIA_TF32_OVERRIDE= 0 ; "
        "torch.backends.cuda.matmul.allow_tf32 was False",
        "unset NVIDIA_TF32_OVERRIDE (or leave torch's TF32 flags on) and run again",
    )


def test_tf32_at_the_fp32_rate_with_nothing_found_blames_cublas() -> None:
    found = mechanism.math_mode(gpu(49.9, "tf32", fp32_peak=66.9, allow_tf32=True, float32_matmul_precision="high"))
    assert found is not None
    assert found[0] == (
        "tf32 ran at the fp32 rate (49.9 TFLOP/s, fp32's peak 66.9): cuBLAS did not use TF32 though torch asked for it"
    )


def test_fp32_as_tf32_names_every_flag_that_turned_it_on() -> None:
    mode = {"fp32_peak": 66.9, "allow_tf32": True, "float32_matmul_precision": "high"}
    mode["variables"] = {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1", "NVIDIA_TF32_OVERRIDE": "0"}
    found = mechanism.math_mode(gpu(400.0, "fp32", **mode))
    assert found == (
        "fp32 ran as TF32 (400 TFLOP/s, above fp32's peak 66.9): TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1; "
        "torch.backends.cuda.matmul.allow_tf32 was True; torch's float32 matmul precision was 'high'",
        "unset the TF32 overrides (NVIDIA_TF32_OVERRIDE, TORCH_ALLOW_TF32_CUBLAS_OVERRIDE) and run again",
    )


@pytest.mark.parametrize("precision", [None, "highest"])
def test_fp32_as_tf32_with_nothing_found_says_something_turned_it_on(precision: str | None) -> None:
    mode = {"fp32_peak": 66.9, "allow_tf32": False, "float32_matmul_precision": precision}
    found = mechanism.math_mode(gpu(400.0, "fp32", **mode))
    assert found is not None
    assert found[0] == (
        "fp32 ran as TF32 (400 TFLOP/s, above fp32's peak 66.9): something in this interpreter turned TF32 on"
    )


def test_no_fp32_peak_or_another_dtype_is_no_math_mode_cause() -> None:
    assert mechanism.math_mode(gpu(49.9, "tf32", fp32_peak=0)) is None
    assert mechanism.math_mode(gpu(49.9, "tf32")) is None
    assert mechanism.math_mode(gpu(49.9, "bf16", fp32_peak=66.9)) is None
    assert mechanism.math_mode(gpu(400.0, "bf16", fp32_peak=66.9)) is None
    plain = Measurement("matmul", "m", 49.9, "TFLOP/s", 0.1, 3, "cuda:0", {"dtype": "tf32", "math_mode": "tf32"}, {})
    assert mechanism.math_mode(plain) is None


def test_read_takes_the_threads_before_the_math_mode() -> None:
    both = Measurement(
        "matmul",
        "m",
        49.9,
        "TFLOP/s",
        0.1,
        3,
        "cuda:0",
        {"dtype": "tf32", "mechanism": {"threads": 1, "ceiling": 2}, "math_mode": {"fp32_peak": 66.9}},
        {},
    )
    found = mechanism.read(both, None)
    assert found is not None and found[0].startswith("the thread count")
    assert mechanism.read(gpu(49.9, "tf32", fp32_peak=66.9), None) is not None


# -- the settings named beside the mechanism --


def test_settings_are_named_only_in_the_direction_the_figure_is_off() -> None:
    slow, fast = setting("CUDA_LAUNCH_BLOCKING", True), setting("SOME_FAST", False)
    assert mechanism.named_settings([slow, fast], cpu(80.0), 100.0) == [slow]
    assert mechanism.named_settings([slow, fast], cpu(120.0), 100.0) == [fast]
    assert mechanism.named_settings([slow, fast], cpu(100.0), 100.0) == []
    assert mechanism.named_settings([slow, fast], cpu(10.0), None) == []


def test_the_settings_the_mechanism_read_are_left_to_it() -> None:
    omp, tf32 = setting("OMP_NUM_THREADS", True), setting("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", False)
    other = setting("CUDA_LAUNCH_BLOCKING", True)
    read = cpu(80.0, threads=16, ceiling=16)
    assert mechanism.named_settings([omp, other], read, 100.0) == [other]
    mode = gpu(80.0, "fp32", fp32_peak=66.9)
    assert mechanism.named_settings([omp, tf32, other], mode, 100.0) == [other]
    # a figure whose mechanism was not recorded is named by the table, as before
    assert mechanism.named_settings([omp, other], cpu(80.0), 100.0) == [omp, other]
