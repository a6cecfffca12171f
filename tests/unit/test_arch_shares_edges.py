"""The edges of engine/measure/arch_shares.py (issue 45's mutation scoring), on a small table built here so every
expectation is worked by hand: a Hopper of 100 SMs at 1,000 MHz (its tensor rates at 92.42% of the clock: bf16
100 x 924.2 x 4,096 / 1e6 = 378.55232 TFLOP/s; memory 4,096 / 8 x 2,000 x 2 / 1e3 = 2,048 GB/s) and an Ada of 100
SMs at 1,000 MHz (bf16 100 x 1,000 x 1,024 / 1e6 = 102.4 TFLOP/s)."""

from __future__ import annotations

import pytest
from rigcheck.engine.measure import arch_shares
from rigcheck.engine.measure.arch_peaks import DeviceProps
from rigcheck.engine.measure.arch_shares import Expected, Figure, NotExpected, classify, expected, lookup
from rigcheck.engine.measure.references import Reference

HOPPER = DeviceProps("NVIDIA H100 test", "sm_90", 100, 1000, 2000, 4096)
ADA = DeviceProps("NVIDIA L40 test", "sm_89", 100, 1000, 2000, 256)
TURING = DeviceProps("Tesla T4 test", "sm_75", 40, 1590, 5001, 256)
HOPPER_BF16 = 378.55232


def entry(model: str, figure: str, value: float, **more: object) -> Reference:
    return Reference(model, figure, value, "TFLOP/s", "rigcheck-measured", f"{model} src", f"{model} s", **more)  # type: ignore[arg-type]


# -- names --


@pytest.mark.parametrize(
    ("name", "figure"),
    [
        ("matmul tf32 8192", Figure("matmul", "tf32", ("matmul tf32 8192",))),
        ("best-fp8", Figure("matmul", "fp8", ("best-fp8",))),
        ("max-find fp8 1024x2048x4096", Figure("max-find", "fp8", ("max-find fp8", "best-fp8"))),
        ("max-find bf16", Figure("max-find", "bf16", ("max-find bf16", "best-bf16"))),
        ("train c64 b256 fp32", Figure("training", "tf32", ("train c64 b256 fp32",), 256, 64, "fp32")),
        ("train c128 b1024 bf16", Figure("training", "bf16", ("train c128 b1024 bf16",), 1024, 128, "bf16")),
        ("device copy 4 GiB", Figure("device copy", "memory", ("device copy 4 GiB", "device copy"))),
        ("device copy", Figure("device copy", "memory", ("device copy", "device copy"))),
        ("matmul int8 4096", None),
        ("host link h2d", None),
        ("train c64 b256 fp16", None),
        ("max-find fp32", None),
    ],
)
def test_each_name_maps_to_its_kind_and_peak(name: str, figure: Figure | None) -> None:
    assert classify(name) == figure


def test_the_models_left_out_are_read_from_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_LEAVE_OUT", " H200 , ,GH200,")
    assert arch_shares.left_out() == frozenset({"H200", "GH200"})
    monkeypatch.delenv("RIGCHECK_LEAVE_OUT")
    assert arch_shares.left_out() == frozenset()


# -- a share carried within the architecture --


def test_a_sibling_s_share_is_carried_to_this_gpu_s_derived_peak() -> None:
    table = (entry("H200", "matmul bf16 4096", 791.52),)  # 791.52 of the H200 datasheet's 989.4: 80%
    found = expected("matmul bf16 4096", HOPPER, None, table)
    assert isinstance(found, Expected)
    assert found.value == pytest.approx(0.8 * HOPPER_BF16)
    assert found.share == pytest.approx(0.8) and found.spread == 0.15 and found.models == ("H200",)
    assert found.unit == "TFLOP/s" and found.derived and not found.cross
    assert found.basis == "Hopper share of its derived peak (H200 H200 s: 80% of its peak)"
    assert found.source == "H200 src"
    assert found.peak == (
        "derived from 100 SMs x 924 MHz x 4,096 bf16 FLOP/clock (sm_90); 924 MHz rated of the 1,000 MHz maximum"
    )


def test_the_median_of_the_siblings_shares_and_each_named() -> None:
    # H200 70%, H100 SXM 72% (of 989.4: 712.368), GH200 90%: the median is 72%
    table = (
        entry("H200", "matmul bf16 4096", 692.58),
        entry("H100 SXM", "matmul bf16 4096", 712.368),
        entry("GH200", "matmul bf16 4096", 890.46),
    )
    found = expected("matmul bf16 4096", HOPPER, None, table)
    assert isinstance(found, Expected)
    assert found.share == pytest.approx(0.72) and found.value == pytest.approx(0.72 * HOPPER_BF16)
    assert found.models == ("GH200", "H100 SXM", "H200")
    assert found.basis == (
        "Hopper share of its derived peak (GH200 GH200 s: 90% of its peak; H100 SXM H100 SXM s: 72% of its peak; "
        "H200 H200 s: 70% of its peak)"
    )
    assert found.source == "GH200 src | H100 SXM src | H200 src"


def test_its_own_model_and_a_baseline_are_never_a_sibling() -> None:
    table = (
        entry("H100 SXM", "matmul bf16 4096", 900.0),
        Reference("H200", "matmul bf16 4096", 900.0, "TFLOP/s", "baseline", "b", "b"),
        entry("H200", "matmul bf16 4096", 791.52),
    )
    found = expected("matmul bf16 4096", HOPPER, "H100 SXM", table)
    assert isinstance(found, Expected) and found.models == ("H200",) and found.share == pytest.approx(0.8)
    # a listed model's own datasheet peak: the H100 SXM's 989.4
    assert found.value == pytest.approx(0.8 * 989.4)
    assert found.basis == "Hopper share of its datasheet peak (H200 H200 s: 80% of its peak)"
    assert found.peak == "the H100 SXM datasheet's 989.4"
    only_baseline = (Reference("H200", "matmul bf16 4096", 900.0, "TFLOP/s", "baseline", "b", "b"),)
    assert isinstance(expected("matmul bf16 4096", HOPPER, None, only_baseline), NotExpected)


def test_an_entry_s_own_peak_is_what_its_share_is_of_where_it_is_the_same_peak() -> None:
    own = (entry("H200", "matmul bf16 4096", 500.0, peak=1000.0, peak_of="bf16"),)
    found = expected("matmul bf16 4096", HOPPER, None, own)
    assert isinstance(found, Expected) and found.share == pytest.approx(0.5)
    other = (entry("H200", "matmul bf16 4096", 494.7, peak=1000.0, peak_of="fp16"),)  # of the model's 989.4
    found = expected("matmul bf16 4096", HOPPER, None, other)
    assert isinstance(found, Expected) and found.share == pytest.approx(0.5)


def test_a_peak_the_model_does_not_list_is_derived_from_its_specimen() -> None:
    """GH200 lists no memory peak: its specimen has no memory clock either, so it holds no copy share; the H200
    lists 4,800 GB/s: 3,840 of it is 80%, carried to 2,048 GB/s."""
    table = (entry("GH200", "device copy 4 GiB", 3000.0), entry("H200", "device copy 4 GiB", 3840.0))
    found = expected("device copy 4 GiB", HOPPER, None, table)
    assert isinstance(found, Expected) and found.models == ("H200",)
    assert found.value == pytest.approx(1638.4) and found.unit == "GB/s" and found.spread == 0.20
    # the GH200's fp32 peak is derived from its specimen: 132 x 1,980 x 256 / 1e6 = 66.90816
    fp32 = (entry("GH200", "matmul fp32 4096", 33.45408),)
    found = expected("matmul fp32 4096", HOPPER, None, fp32)
    assert isinstance(found, Expected) and found.share == pytest.approx(0.5)


def test_a_max_find_shape_takes_the_max_find_entry_before_the_best_of() -> None:
    table = (entry("H200", "best-bf16", 890.46), entry("H200", "max-find bf16", 791.52))
    found = expected("max-find bf16 2048x8192x16384", HOPPER, None, table)
    assert isinstance(found, Expected) and found.share == pytest.approx(0.8) and found.spread == 0.15
    found = expected("max-find bf16 2048x8192x16384", HOPPER, None, table[:1])
    assert isinstance(found, Expected) and found.share == pytest.approx(0.9)
    assert arch_shares.own_reference("H200", "max-find bf16 1x2x3", table) == table[1]
    assert arch_shares.own_reference("H200", "max-find bf16 1x2x3", table[:1]) == table[0]
    assert arch_shares.own_reference("H200", "host link", table) is None


# -- a share carried from another architecture, or none --


def test_another_architecture_s_share_is_coarse_and_never_fails() -> None:
    table = (entry("H200", "matmul bf16 4096", 791.52),)
    found = expected("matmul bf16 4096", ADA, None, table)
    assert isinstance(found, Expected) and found.cross and found.spread == 0.30 and found.derived is True
    assert found.value == pytest.approx(0.8 * 102.4)
    assert found.basis == "Hopper share carried to Ada (no Ada model measured; coarse: H200 H200 s: 80% of its peak)"
    reference = found.reference("NVIDIA L40 test", "matmul bf16 4096")
    assert reference.warn_below == pytest.approx(0.70) and reference.fail_below == 0.0
    assert reference.kind == "expected" and reference.value == pytest.approx(81.92)
    assert reference.source == f"{found.basis}; peak {found.peak}; H200 src"


def test_a_share_within_the_architecture_may_fail() -> None:
    found = expected("matmul bf16 4096", HOPPER, None, (entry("H200", "matmul bf16 4096", 791.52),))
    assert isinstance(found, Expected)
    reference = found.reference("NVIDIA H100 test", "matmul bf16 4096")
    assert reference.warn_below == pytest.approx(0.85) and reference.fail_below is None


def test_another_vendor_s_share_is_not_carried() -> None:
    table = (entry("MI300X", "matmul bf16 4096", 1000.0),)
    found = expected("matmul bf16 4096", ADA, None, table)
    assert isinstance(found, NotExpected)
    assert found.reason.startswith("no Ada model, nor another architecture of its class, has a measured matmul bf16")


def test_a_legacy_part_carries_no_share_from_another_of_its_class() -> None:
    table = (entry("Tesla P40", "matmul fp32 4096", 6.0),)
    found = expected("matmul fp32 4096", TURING, None, table)
    assert isinstance(found, NotExpected)
    assert found.reason.startswith(
        "no Turing model, nor another architecture of its class, has a measured matmul fp32 4096 (parts without"
    )


def test_training_is_not_carried_across_architectures() -> None:
    table = (entry("H200", "train c64 b256 bf16", 30000.0),)
    found = expected("train c64 b256 bf16", ADA, None, table)
    assert isinstance(found, NotExpected)
    assert found.reason == (
        "no Ada model has a measured train c64 b256 bf16; a training share is not carried across architectures"
    )


@pytest.mark.parametrize(("batch", "spread"), [(2048, 0.50), (4095, 0.50), (4096, 0.30), (8192, 0.30)])
def test_training_below_4096_has_the_launch_spread(batch: int, spread: float) -> None:
    name = f"train c64 b{batch} bf16"
    found = expected(name, HOPPER, None, (entry("H200", name, 30000.0),))
    assert isinstance(found, Expected) and found.spread == spread and found.unit == "samples/s"
    assert found.basis.startswith("Hopper share of its derived roofline (H200 H200 s: ")
    assert found.basis.endswith(" of its roofline)")


def test_an_architecture_s_own_spread_comes_first() -> None:
    mi = DeviceProps("AMD Instinct test", "gfx942", 100, 2000, 1000, 8192)
    found = expected("matmul bf16 4096", mi, None, (entry("MI300X", "matmul bf16 4096", 653.7),))
    assert isinstance(found, Expected) and found.spread == 0.2
    assert found.share == pytest.approx(0.5)  # of the MI300X's own datasheet 1,307.4, no other model's


@pytest.mark.parametrize(
    ("name", "props", "reason"),
    [
        ("host link h2d", HOPPER, "no share of a peak holds a figure such as 'host link h2d'"),
        ("matmul bf16 4096", DeviceProps("x", ""), "no per-unit rates on record for an unknown architecture"),
        ("matmul bf16 4096", DeviceProps("x", "sm_999"), "no per-unit rates on record for sm_999"),
        (
            "matmul bf16 4096",
            DeviceProps("x", "sm_90"),
            "no bf16 peak: the driver reported no SM/CU count or maximum clock for it",
        ),
        (
            "train c64 b256 bf16",
            DeviceProps("x", "sm_90", 100, 1000),
            "no memory peak for its training roofline: the driver reported no memory bus width or maximum memory "
            "clock for it",
        ),
    ],
)
def test_no_expectation_says_why(name: str, props: DeviceProps, reason: str) -> None:
    found = expected(name, props, None, (entry("H200", name, 500.0),))
    assert found == NotExpected(reason)


# -- the lookup --


def test_a_gpu_with_no_entry_and_no_props_is_told_why() -> None:
    assert lookup("NVIDIA L40 test", "matmul bf16 4096") == (
        "no entry for NVIDIA L40 test, and its stage recorded no architecture, SMs and clocks to derive one"
    )


def test_a_listed_model_left_out_keeps_only_its_baseline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_LEAVE_OUT", "H200")
    baseline = {"figures": {"NVIDIA H200/matmul bf16 4096": {"value": 800.0}}, "source": "box"}
    found = lookup("NVIDIA H200", "matmul bf16 4096", None, baseline)
    assert isinstance(found, Reference) and found.kind == "baseline" and found.value == 800.0
    none = lookup("NVIDIA H200", "matmul bf16 4096", None, None)
    assert none == "no entry for NVIDIA H200, and its stage recorded no architecture, SMs and clocks to derive one"


def test_a_figure_an_expectation_and_a_reason_are_values_hashable_and_never_changed() -> None:
    found = expected("matmul bf16 4096", HOPPER, None, (entry("H200", "matmul bf16 4096", 791.52),))
    missing = expected("host link", HOPPER)
    figure = classify("matmul bf16 4096")
    for value in (found, missing, figure):
        assert hash(value) == hash(value)
        with pytest.raises(AttributeError):
            value.spread = 1.0  # type: ignore[union-attr]
