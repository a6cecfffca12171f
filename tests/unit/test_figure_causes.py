"""An impossible figure names its cause: a broken timer only when its two clocks disagree, else the
math mode, flag or dtype that changed the work, else a count that does not match; each with a next step."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.measure.plausibility import COUNT_MISMATCH, Limit, MathMode, excess_cause, over_limit
from rigcheck.engine.measure.stats import TimingStats
from rigcheck.engine.stages.common import figures, limits
from rigcheck.engine.stages.common.figures import checked
from rigcheck.engine.trust.conditions import judge

FP32_PEAK = Limit(66.9, "datasheet dense fp32 peak: NVIDIA H200 Tensor Core GPU datasheet (SXM)")
AGREE = TimingStats((1e-3,) * 10, (1.05e-3,) * 10)  # events and the wall clock around them agree
DISAGREE = TimingStats((3.1e-5,) * 10, (3.1e-3,) * 10)  # events on another device's idle stream


@pytest.fixture(autouse=True)
def plain_math(monkeypatch: pytest.MonkeyPatch) -> Any:
    """No override in the environment and torch's defaults, whatever the machine running the tests has."""
    for name in ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"):
        monkeypatch.delenv(name, raising=False)
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    yield
    torch.set_float32_matmul_precision(before)


def fp32(value: float, stage: str = "matmul", device: str = "cuda:0") -> Measurement:
    return Measurement(stage, "matmul fp32 4096", value, "TFLOP/s", 1.0, 20, device, {"dtype": "fp32"})


def verdict_of(events: list[Any]) -> Verdict:
    assert len(events) == 2 and isinstance(events[1], Verdict) and events[1].status == Status.FAIL
    return events[1]


def test_the_tf32_override_is_named_not_the_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "1")
    events = list(checked(fp32(400.0), AGREE, FP32_PEAK))
    broken = events[0].params["broken"]
    assert broken.startswith("impossible: 400 TFLOP/s is 5.98x the limit of 66.9")
    assert "its two clocks agree (events and wall clock): the work was not what was asked" in broken
    assert "fp32 ran as TF32: NVIDIA_TF32_OVERRIDE=1 is set" in broken and "timer is broken" not in broken
    line = verdict_of(events).explanation
    assert line.endswith("the figure is not a result; next: unset NVIDIA_TF32_OVERRIDE") and "\n" not in line
    assert judge({"samples": 10}, events[0]).trust == "BROKEN"
    # beside it, a figure within its limit under the same override is a plain result
    (clean,) = checked(fp32(51.2), AGREE, FP32_PEAK)
    assert clean.params["broken"] is None


def test_clocks_that_disagree_are_a_broken_timer_even_with_an_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "1")
    events = list(checked(fp32(6554.0, device="cuda:1"), DISAGREE, FP32_PEAK))
    broken = events[0].params["broken"]
    assert broken.startswith("the device timer disagrees with the wall clock") and "the timer is broken" in broken
    assert "NVIDIA_TF32_OVERRIDE" not in broken
    assert "impossible: 6,554 TFLOP/s" in broken  # the excess is still said, as a consequence
    assert "next: run the stage again alone on this GPU" in verdict_of(events).explanation


def test_torchs_cublas_override_and_its_own_precision_flag_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE", "1")
    line = verdict_of(list(checked(fp32(400.0), AGREE, FP32_PEAK))).explanation
    assert "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1 is set" in line and line.endswith(
        "next: unset TORCH_ALLOW_TF32_CUBLAS_OVERRIDE"
    )
    monkeypatch.delenv("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE")
    torch.set_float32_matmul_precision("medium")
    line = verdict_of(list(checked(fp32(400.0), AGREE, FP32_PEAK))).explanation
    assert "fp32 ran as TF32 or bf16: torch.get_float32_matmul_precision() is 'medium'" in line
    assert line.endswith("next: call torch.set_float32_matmul_precision('highest') before measuring")
    # =0 forbids TF32: it cannot be why a figure is too high
    torch.set_float32_matmul_precision("highest")
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "0")
    assert COUNT_MISMATCH.text in verdict_of(list(checked(fp32(400.0), AGREE, FP32_PEAK))).explanation


def test_each_torch_flag_is_named_by_the_pure_rule() -> None:
    plain = MathMode(env={}, allow_tf32=False, float32_precision="highest", cudnn_allow_tf32=True)
    assert excess_cause("fp32", 400.0, 66.9, plain) == COUNT_MISMATCH
    tf32 = excess_cause("fp32", 400.0, 66.9, MathMode(env={}, allow_tf32=True, float32_precision="highest"))
    assert tf32.text == "fp32 ran as TF32: torch.backends.cuda.matmul.allow_tf32 is True"
    assert tf32.next_step == "set torch.backends.cuda.matmul.allow_tf32 = False before measuring"
    # the precision as torch returns it: a string made at run time, compared by value, never by identity
    for precision, words in (("hi" + "gh".strip(), "TF32"), ("medi" + "um".strip(), "TF32 or bf16")):
        mode = MathMode(env={}, allow_tf32=False, float32_precision=precision)
        assert excess_cause("fp32", 400.0, 66.9, mode).text.startswith(f"fp32 ran as {words}: torch.get_float32")
    conv = excess_cause("fp32", 40.0, 19.5, plain, uses_cudnn=True)
    assert "torch.backends.cudnn.allow_tf32 is True" in conv.text
    half = MathMode(env={}, fp16_reduced_reduction=True)
    reduced = excess_cause("fp16", 1500.0, 989.4, half)
    assert "allow_fp16_reduced_precision_reduction is True" in reduced.text and "rule it out" in reduced.next_step
    assert excess_cause("fp16", 9000.0, 989.4, half) == COUNT_MISMATCH  # far past what fp16 reductions can give
    assert excess_cause("fp16", 1500.0, 989.4, MathMode(env={}, fp16_reduced_reduction=False)) == COUNT_MISMATCH


def test_a_figure_that_fits_a_faster_dtype_ran_as_it(monkeypatch: pytest.MonkeyPatch) -> None:
    faster = {"tf32": Limit(494.7, "datasheet dense tf32 peak"), "bf16": Limit(989.4, "datasheet dense bf16 peak")}
    monkeypatch.setattr(figures, "gpu_matmul_limit", lambda device, dtype: faster.get(dtype))
    line = verdict_of(list(checked(fp32(400.0), AGREE, FP32_PEAK))).explanation
    assert "fp32 ran as tf32: the figure fits the tf32 limit of 494.7" in line
    assert "next: look for what sets the math mode" in line
    # past even the fastest dtype's limit: the count is wrong
    line = verdict_of(list(checked(fp32(5000.0), AGREE, FP32_PEAK))).explanation
    assert "the FLOP or byte count does not match the work done" in line and "timer is broken" not in line


def test_max_finds_best_group_over_its_limit_gets_a_cause_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NVIDIA_TF32_OVERRIDE", "1")
    top = over_limit(420.0, "TFLOP/s", 66.9, "peak; the best group")
    assert top is not None and "timer" not in top
    events = list(checked(fp32(60.0), AGREE, FP32_PEAK, top))
    assert events[0].params["broken"].startswith("impossible: 420 TFLOP/s")
    assert "NVIDIA_TF32_OVERRIDE=1" in events[0].params["broken"]
    # a clock reason the caller found itself is still a broken timer
    known = "two host clocks disagree (perf_counter 5 ms, CLOCK_REALTIME 10 ms)"
    line = verdict_of(list(checked(fp32(1.0, device="cpu"), None, None, known))).explanation
    assert "the timer is broken" in line and "clocksource" in line


def test_a_figure_with_no_second_clock_says_so() -> None:
    events = list(checked(fp32(400.0), None, FP32_PEAK))
    assert (
        "with no second clock to tell a broken timer from work other than what was asked"
        in (events[0].params["broken"])
    )


def fake_gpu(monkeypatch: pytest.MonkeyPatch, name: str, major: int, minor: int, sms: int) -> torch.device:
    props = SimpleNamespace(name=name, major=major, minor=minor, multi_processor_count=sms)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device=None: props)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: name)
    monkeypatch.setattr(torch.version, "hip", None)
    return torch.device("cuda:0")


def test_an_emulated_or_rate_limited_dtype_is_bounded_by_fp32_not_called_impossible(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    p40 = fake_gpu(monkeypatch, "Tesla P40", 6, 1, 30)
    fp16 = limits.gpu_matmul_limit(p40, "fp16")
    assert fp16 is not None and fp16.value == 12.0
    assert fp16.basis.startswith("fp16 runs at 1/64 of fp32 on sm_61, so at most the fp32 rate")
    bf16 = limits.gpu_matmul_limit(p40, "bf16")
    assert bf16 is not None and bf16.value == 12.0 and bf16.basis.startswith("bf16 emulated: sm_61 has no native bf16")
    # 11 TFLOP/s of fp16 through fp32 math on a P40 is possible: no FAIL
    assert over_limit(11.0, "TFLOP/s", fp16.value, fp16.basis) is None
    gtx = fake_gpu(monkeypatch, "NVIDIA GeForce GTX 1080 Ti", 6, 1, 28)
    bound = limits.gpu_matmul_limit(gtx, "fp16")
    assert bound is not None and bound.value == pytest.approx(28 * 2.6 * 256 / 1e3)
    # beside them, a GPU with native bf16 keeps its own bf16 peak
    h200 = fake_gpu(monkeypatch, "NVIDIA H200", 9, 0, 132)
    native = limits.gpu_matmul_limit(h200, "bf16")
    assert native is not None and native.value == 989.4 and native.basis.startswith("datasheet dense bf16 peak")


def test_a_figure_exactly_at_a_faster_dtypes_limit_and_margin_is_that_dtype() -> None:
    """The edge is inside: a figure at exactly the faster limit plus its margin is named as the faster dtype,
    and one a hair above it is not (no faster mode explains it)."""
    plain = MathMode(env={}, allow_tf32=False, float32_precision="highest")
    edge = 494.7 * (1.0 + 0.10)
    at = excess_cause("fp32", edge, 66.9, plain, {"tf32": 494.7}, margin=0.10)
    assert at.text.startswith("fp32 ran as tf32: the figure fits the tf32 limit of 494.7")
    assert excess_cause("fp32", edge * 1.0001, 66.9, plain, {"tf32": 494.7}, margin=0.10) == COUNT_MISMATCH
