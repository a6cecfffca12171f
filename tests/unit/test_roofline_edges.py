"""A GPU training figure with no reference of its own, judged by the roofline of its own matmul and copy figures
(engine/trust/expect_training.py), with every expected value worked out by hand here, never by the module:

    FLOPs per sample, c128:  3 x (6 blocks x 2 convs x 2x9x128x128x49 + 2x9x12x128x49) = 524,289,024
    bytes per sample, c128:  3 x 6 blocks x 20 passes x 128 x 49 x 2 (bf16) = 4,515,840; x 4 (fp32) = 9,031,680
    roofline(T TFLOP/s, C GB/s) = 1 / (FLOPs / (T x 1e12) + bytes / (C x 1e9)) samples/s

The H200's references set the share of it a healthy GPU reaches: matmul bf16 8192 779.4 TFLOP/s, matmul tf32 8192
398.3, device copy 4 GiB 4,259.3 GB/s; its roofline for c128 bf16 is 577,062.9 samples/s, for c128 fp32 290,970.2.
train c128 b8192 bf16 165,793.9 is 28.73% of it, c128 b4096 bf16 159,708.2 is 27.68%, c128 b8192 fp32 125,393.9
is 43.10%. An H100 at 700 TFLOP/s bf16 and 2,900 GB/s: roofline 433,619.3 for c128 bf16, so b8192 expects
124,581.6 and b4096 120,008.7; at 400 TFLOP/s tf32, 225,983.9 for c128 fp32, so b8192 fp32 expects 97,388.0."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from rigcheck.engine.events import Measurement, Status, event_from_dict, event_to_dict
from rigcheck.engine.trust.expect_training import training_verdict
from test_expectations import h100_run, matmul, trained

H100 = "NVIDIA H100 80GB HBM3"
B8192_BF16 = 124_581.63  # 0.287306 x 433,619.28
B4096_BF16 = 120_008.68  # 0.276760 x 433,619.28
B8192_FP32 = 97_387.97  # 0.430951 x 225,983.85


def device_copy(
    value: float, device: str = "cuda:0", trust: str = "TRUSTED", name: str = "device copy 4 GiB"
) -> Measurement:
    conditions = {"gpu_name": H100, "trust": trust}
    return Measurement("bandwidth", name, value, "GB/s", 0.01, 6, device, {"bound": "memory"}, conditions)


def test_a_pass_says_what_it_was_expected_to_reach_and_on_what_basis_and_nothing_more() -> None:
    verdict = training_verdict(trained(112_000.0), "training", h100_run())
    assert verdict is not None and verdict.status == Status.PASS
    assert verdict.explanation == (
        "cuda:0 train c128 b8192 bf16 112,000 samples/s: 90% of the 124,582 expected from a roofline of its own "
        "matmul bf16 (700 TFLOP/s) and device copy (2,900 GB/s), at the 29% of it the H200 reaches "
        "(rigcheck-measured); no reference for this model, network, batch and dtype"
    )
    assert (verdict.check, verdict.device, verdict.tolerance) == ("roofline train c128 b8192 bf16", "cuda:0", 0.5)
    numbers = {"expected": 124_581.6, "ratio": 0.899, "calibration": 0.2873, "matmul_tflops": 700.0}
    assert {key: verdict.numbers[key] for key in numbers} == numbers
    assert verdict.numbers["copy_gbs"] == 2900.0 and verdict.numbers["expectation"] == pytest.approx(B8192_BF16)


@pytest.mark.parametrize(("share", "status"), [(0.5002, Status.PASS), (0.4998, Status.WARN)])
def test_batch_4096_is_judged_with_its_own_share_on_each_side_of_half(share: float, status: Status) -> None:
    verdict = training_verdict(trained(share * B4096_BF16, "c128 b4096 bf16"), "training", h100_run())
    assert verdict is not None and verdict.status == status
    assert "of the 120,009 expected" in verdict.explanation and "at the 28% of it" in verdict.explanation
    assert verdict.explanation.count("below half of it") == (status == Status.WARN)


def test_fp32_is_bounded_by_its_tf32_matmul_not_the_bf16_one() -> None:
    run = [*h100_run(), matmul(400.0, H100, "matmul tf32 8192")]
    verdict = training_verdict(trained(0.9 * B8192_FP32, "c128 b8192 fp32"), "training", run)
    assert verdict is not None and verdict.status == Status.PASS
    assert verdict.numbers["expected"] == pytest.approx(B8192_FP32, abs=0.06)
    assert "of the 97,388 expected from a roofline of its own matmul tf32 (400 TFLOP/s)" in verdict.explanation
    assert training_verdict(trained(1.0, "c128 b8192 fp32"), "training", h100_run()) is None  # no tf32 figure


def test_the_best_sound_figure_of_this_gpu_is_the_roofline_s_rate() -> None:
    suspect = matmul(750.0, H100, "matmul bf16 4096")
    run = [
        *h100_run(),  # matmul bf16 8192 700 TRUSTED, device copy 4 GiB 2,900 TRUSTED
        replace(suspect, conditions=suspect.conditions | {"trust": "SUSPECT"}),
        replace(matmul(900.0, H100, "matmul bf16 16384"), params={"broken": True}),
        matmul(950.0, H100, "matmul bf16 8192", device="cuda:1"),
        matmul(800.0, H100, "matmul tf32 8192"),
        matmul(990.0, H100, "matmul fp8 8192"),
        device_copy(3500.0, device="cuda:1"),
        device_copy(3400.0, trust="NOISY"),
        device_copy(2800.0, name="device copy 1 GiB"),
    ]
    verdict = training_verdict(trained(112_000.0), "training", run)
    assert verdict is not None and verdict.numbers["matmul_tflops"] == 700.0 and verdict.numbers["copy_gbs"] == 2900.0
    unknown_trust = replace(matmul(720.0, H100, "matmul bf16 2048"), conditions={"gpu_name": H100})
    verdict = training_verdict(trained(112_000.0), "training", [*run, unknown_trust])  # no trust read: counted
    assert verdict is not None and verdict.numbers["matmul_tflops"] == 720.0
    assert verdict.numbers["expected"] == pytest.approx(125_715.77, abs=0.06)  # 0.287306 x roofline(720, 2,900)


def test_a_figure_that_is_no_result_or_has_no_rates_to_judge_it_by_is_left_alone() -> None:
    fine = trained(112_000.0)
    assert training_verdict(replace(fine, params=fine.params | {"broken": True}), "training", h100_run()) is None
    assert training_verdict(trained(0.0), "training", h100_run()) is None
    assert training_verdict(trained(-1.0), "training", h100_run()) is None
    assert training_verdict(replace(fine, name="train c128 b8192 fp16"), "training", h100_run()) is None
    assert training_verdict(replace(fine, conditions={"trust": "TRUSTED"}), "training", h100_run()) is None  # no GPU
    assert training_verdict(replace(fine, device="cpu"), "training", h100_run()) is None
    matmul_only, copy_only = h100_run()
    assert training_verdict(fine, "training", [matmul_only]) is None  # no copy figure in this run
    assert training_verdict(fine, "training", [copy_only]) is None  # no matmul figure
    zero = replace(matmul_only, value=0.0)
    assert training_verdict(fine, "training", [zero, copy_only]) is None  # a zero matmul is no rate
    assert training_verdict(trained(1.0, "c96 b8192 bf16"), "training", h100_run()) is None  # the H200 has no c96
    assert training_verdict(trained(1.0, "c128 b2048 bf16"), "training", h100_run()) is None  # below 4096


def test_figures_read_back_from_the_store_are_matched_by_their_device_s_name() -> None:
    def read_back(m: Measurement) -> Measurement:
        found = event_from_dict(json.loads(json.dumps(event_to_dict(m))))  # its device a new string
        assert isinstance(found, Measurement)
        return found

    verdict = training_verdict(trained(112_000.0), "training", [read_back(m) for m in h100_run()])
    assert verdict is not None and verdict.status == Status.PASS and verdict.numbers["expected"] == 124_581.6


def test_a_ratio_is_stored_to_four_places() -> None:
    verdict = training_verdict(trained(112_100.0), "training", h100_run())
    assert verdict is not None and verdict.numbers["ratio"] == 0.8998  # 112,100 / 124,581.63 = 0.89981


@pytest.mark.parametrize("missing", ["matmul bf16 8192", "device copy 4 GiB"])
def test_without_one_of_the_h200_s_calibrating_figures_no_roofline_is_given(
    missing: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rigcheck.engine.trust import expect_training

    table = expect_training.reference_for
    monkeypatch.setattr(
        expect_training, "reference_for", lambda model, figure: None if figure == missing else table(model, figure)
    )
    assert training_verdict(trained(112_000.0), "training", h100_run()) is None
