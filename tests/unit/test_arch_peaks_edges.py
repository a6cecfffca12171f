"""The edges of engine/measure/arch_peaks.py (issue 45's mutation scoring): the exact words a derived peak is
named in, each reason a peak is not derived, a figure's props read from odd values, the 3% agreement edge on
each side and which datasheet peaks are checked. Every expected value is worked by hand from the rates file."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.measure import arch_peaks
from rigcheck.engine.measure.arch_peaks import (
    Check,
    DeviceProps,
    NoPeak,
    Peak,
    arch_key,
    check_peaks,
    compute_peak,
    family_of,
    memory_peak,
    props_of,
)

H100 = DeviceProps("NVIDIA H100 80GB HBM3", "sm_90", 132, 1980, 2619, 5120)
MI300X = DeviceProps("AMD Instinct MI300X", "gfx942", 304, 2100, 1300, 8192)


@pytest.mark.parametrize(
    ("arch", "key"),
    [
        (" GFX942:sramecc+:xnack- ", "gfx942"),
        ("sm_90a", "sm_90"),
        ("sm_100f", "sm_100"),
        ("sm_90b", "sm_90b"),
        ("sm_90", "sm_90"),
        ("gfx90a", "gfx90a"),
    ],
)
def test_the_architecture_s_key(arch: str, key: str) -> None:
    assert arch_key(arch) == key


def test_a_family_is_named_or_none() -> None:
    assert family_of("sm_90a") == "Hopper" and family_of("sm_999") is None


def test_a_source_is_its_citation_and_page() -> None:
    cited = arch_peaks.load()["sources"]["nv-h100-wp"]
    assert arch_peaks.source_of("nv-h100-wp") == f"{cited['cite']} ({cited['page']})"
    assert arch_peaks.source_of("nowhere") == "nowhere ()"


# -- compute --


def test_a_tensor_rate_at_its_rated_clock_in_words() -> None:
    found = compute_peak(H100, "bf16")  # 1,980 x 0.9242 = 1,829.916 MHz; 132 x 1,829.916 x 4,096 / 1e6
    assert isinstance(found, Peak)
    assert found.value == pytest.approx(989.3843, abs=1e-3)
    assert found.words == (
        "derived from 132 SMs x 1,830 MHz x 4,096 bf16 FLOP/clock (sm_90); 1,830 MHz rated of the 1,980 MHz maximum"
    )
    assert (found.what, found.family, found.source) == ("bf16", "Hopper", "nv-h100-wp")


def test_an_amd_part_counts_cus() -> None:
    found = compute_peak(MI300X, "fp32")  # 304 x 2,100 x 256 / 1e6 = 163.4304
    assert isinstance(found, Peak) and found.value == pytest.approx(163.4304)
    assert found.words == "derived from 304 CUs x 2,100 MHz x 256 fp32 FLOP/clock (gfx942)"


def test_a_geforce_halves_its_tensor_rate_in_words() -> None:
    found = compute_peak(DeviceProps("NVIDIA GeForce RTX 4090", "sm_89", 128, 2520), "bf16")
    assert isinstance(found, Peak) and found.value == pytest.approx(128 * 2520 * 512 / 1e6)
    assert found.words == (
        "derived from 128 SMs x 2,520 MHz x 512 bf16 FLOP/clock (sm_89); GeForce: half rate with fp32 accumulate"
    )
    titan = compute_peak(DeviceProps("NVIDIA TITAN Ada", "sm_89", 128, 2520), "fp16")
    assert isinstance(titan, Peak) and titan.value == pytest.approx(128 * 2520 * 512 / 1e6)


@pytest.mark.parametrize(
    ("props", "dtype", "reason"),
    [
        (DeviceProps("x", "sm_999", 1, 1), "bf16", "no per-unit rates on record for sm_999"),
        (DeviceProps("x", "", 1, 1), "bf16", "no per-unit rates on record for an unknown architecture"),
        (DeviceProps("x", "sm_75", 40, 1590), "bf16", "Turing (sm_75) has no dense bf16 rate on record"),
        (DeviceProps("x", "sm_90", 0, 1980), "bf16", "the driver reported no SM/CU count or maximum clock for it"),
        (DeviceProps("x", "sm_90", 132, None), "fp32", "the driver reported no SM/CU count or maximum clock for it"),
        (DeviceProps("x", "sm_90", 132, 0), "fp32", "the driver reported no SM/CU count or maximum clock for it"),
    ],
)
def test_no_compute_peak_says_why(props: DeviceProps, dtype: str, reason: str) -> None:
    assert compute_peak(props, dtype) == NoPeak(dtype, reason)


# -- memory --


def test_memory_in_words_with_its_source_by_vendor() -> None:
    found = memory_peak(H100)  # 5,120 / 8 x 2,619 x 2 / 1e3 = 3,352.32
    assert isinstance(found, Peak) and found.value == pytest.approx(3352.32)
    assert found.words == "derived from a 5,120-bit bus x 2,619 MHz x 2 transfers/clock (sm_90)"
    assert (found.what, found.family, found.source) == ("memory", "Hopper", "nvml-memory")
    amd = memory_peak(MI300X)  # 8,192 / 8 x 1,300 x 4 / 1e3 = 5,324.8
    assert isinstance(amd, Peak) and amd.value == pytest.approx(5324.8) and amd.source == "amdgpu-mclk"
    assert arch_peaks.peak(H100, "memory") == found


@pytest.mark.parametrize(
    ("props", "reason"),
    [
        (DeviceProps("x", "sm_999", 1, 1, 1, 1), "no memory rule on record for sm_999"),
        (DeviceProps("x", "", 1, 1, 1, 1), "no memory rule on record for an unknown architecture"),
        (
            DeviceProps("x", "gfx1151", 40, 2900, 1000, 256),
            "how the driver's memory clock on RDNA 3.5 (gfx1151) maps to transfers is not on record",
        ),
        (
            DeviceProps("x", "sm_90", 132, 1980, 2619, None),
            "the driver reported no memory bus width or maximum memory clock for it",
        ),
        (
            DeviceProps("x", "sm_90", 132, 1980, None, 5120),
            "the driver reported no memory bus width or maximum memory clock for it",
        ),
    ],
)
def test_no_memory_peak_says_why(props: DeviceProps, reason: str) -> None:
    assert memory_peak(props) == NoPeak("memory", reason)


# -- a figure's props --


@pytest.mark.parametrize(
    ("params", "conditions", "props"),
    [
        (
            {"gpu_arch": "sm_90", "gpu_units": "132", "sm_clock_max_mhz": "1980", "mem_clock_max_mhz": 2619.0},
            {"gpu_name": "from the sampler", "sm_clock_max_mhz": 1000},
            DeviceProps("from the sampler", "sm_90", 132, 1980.0, 2619.0, None),
        ),
        (
            {"gpu_arch": "sm_90", "gpu_name": "N", "gpu_units": "", "memory_bus_bits": "5120.0"},
            None,
            DeviceProps("N", "sm_90", None, None, None, 5120),
        ),
        (
            {"gpu_arch": "sm_90", "gpu_units": "many", "sm_clock_max_mhz": [1], "memory_bus_bits": 0},
            {},
            DeviceProps("", "sm_90", None, None, None, None),
        ),
        (
            {"gpu_arch": "sm_90", "gpu_units": 0, "sm_clock_max_mhz": None},
            {"sm_clock_max_mhz": "1755"},
            DeviceProps("", "sm_90", None, 1755.0, None, None),
        ),
    ],
)
def test_a_figure_s_props_from_odd_values(
    params: dict[str, Any], conditions: dict[str, Any] | None, props: DeviceProps
) -> None:
    assert props_of(params, conditions) == props


def test_a_figure_with_no_architecture_has_no_props() -> None:
    assert props_of({"gpu_arch": "", "gpu_units": 132}) is None


# -- datasheet against derivation --


@pytest.mark.parametrize(
    ("derived", "agrees"), [(1.029, True), (1.031, False), (0.971, True), (0.969, False), (None, False)]
)
def test_a_derived_peak_agrees_within_3_percent_on_either_side(derived: float | None, agrees: bool) -> None:
    check = Check("M", "bf16", 1.0, derived, "w")
    assert check.agrees is agrees
    assert check.error == (None if derived is None else pytest.approx(derived - 1.0))


def test_which_datasheet_peaks_are_checked() -> None:
    # the skipped peaks first, and two for a model with no specimen: each of the rest is still checked
    table = {"H200": {"host_link": 63.0, "cpu_fp32": 1.0, "bf16": 989.4}, "Nobody": {"bf16": 100.0, "fp16": 50.0}}
    rows = [r for r in check_peaks(table) if r.model in ("H200", "Nobody", "MI355X", "B200", "T4")]
    by = {(r.model, r.what): r for r in rows}
    assert ("H200", "host_link") not in by and ("H200", "cpu_fp32") not in by
    h200 = by["H200", "bf16"]  # 132 x 1,829.916 x 4,096 / 1e6 against 989.4
    assert h200.derived == pytest.approx(989.3843, abs=1e-3) and h200.agrees
    assert h200.words.startswith("derived from 132 SMs x 1,830 MHz")
    assert by["Nobody", "bf16"] == Check(
        "Nobody", "bf16", 100.0, None, "not checked: no driver-reported SMs and clocks on record"
    )
    assert by["Nobody", "fp16"] == Check(
        "Nobody", "fp16", 50.0, None, "not checked: no driver-reported SMs and clocks on record"
    )
    assert not [r for r in rows if r.model in ("MI355X", "B200", "T4")]  # only the table given, and the specimens'
    lt = check_peaks({"T4": {"bf16": 65.0}, "MI355X": {"bf16": 2300.0}, "B200": {"bf16": 2250.0}})
    t4 = next(r for r in lt if r.model == "T4")
    assert t4 == Check("T4", "bf16", 65.0, None, "Turing (sm_75) has no dense bf16 rate on record")
    mi = next(r for r in lt if r.model == "MI355X")
    assert mi.derived is not None and mi.words.startswith("the table's 2,300 is the MAMF table's 'theory' column")
    b200 = next(r for r in lt if r.model == "B200")
    assert b200.derived is None and b200.words.startswith("not checked")


def test_a_specimen_s_own_peaks_are_checked_too() -> None:
    rows = {(r.model, r.what): r for r in check_peaks({})}
    l40s = rows["L40S", "fp32"]  # the specimen's 91.6 against 142 x 2,520 x 256 / 1e6 = 91.60704
    assert l40s.datasheet == 91.6 and l40s.derived == pytest.approx(91.60704) and l40s.agrees


def test_props_peaks_reasons_and_checks_are_values_hashable_and_never_changed() -> None:
    found, missing = compute_peak(H100, "fp32"), compute_peak(H100, "int4")
    for value in (H100, found, missing, Check("M", "bf16", 1.0, 1.0, "w")):
        assert hash(value) == hash(value)
        with pytest.raises(AttributeError):
            value.what = "x"  # type: ignore[misc, union-attr]
