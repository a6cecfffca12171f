"""Peaks from what the driver reports: fake device properties of an A100, an L40S, an RTX 4090, an MI300X and a
gfx1151 APU give their datasheet peaks within 3%; every datasheet peak the reference table holds is checked (or
its exception said); an architecture with no rates on record gets no peak, with the reason, never a guess."""

from __future__ import annotations

import pytest
from rigcheck.engine.measure.arch_peaks import (
    TOLERANCE,
    DeviceProps,
    NoPeak,
    Peak,
    arch_key,
    check_peaks,
    compute_peak,
    memory_peak,
    peak,
    props_of,
)
from rigcheck.engine.measure.references import MODELS

# (props as the driver reports them, datasheet peaks with the vendor's document)
FAKES = {
    # NVIDIA A100 80GB SXM datasheet: 19.5 / 156 / 312 dense, 2,039 GB/s
    "A100": (
        DeviceProps("NVIDIA A100-SXM4-80GB", "sm_80", 108, 1410, 1593, 5120),
        {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0, "memory": 2039.0},
    ),
    # NVIDIA L40S datasheet: 91.6 / 183 / 362.05 / 733 dense, 864 GB/s
    "L40S": (
        DeviceProps("NVIDIA L40S", "sm_89", 142, 2520, 9001, 384),
        {"fp32": 91.6, "tf32": 183.0, "bf16": 362.05, "fp16": 362.05, "fp8": 733.0, "memory": 864.0},
    ),
    # NVIDIA Ada whitepaper appendix, RTX 4090: 82.6 fp32; 165.2 fp16/bf16 and 330.3 fp8 with fp32 accumulate
    "RTX 4090": (
        DeviceProps("NVIDIA GeForce RTX 4090", "sm_89", 128, 2520, 10501, 384),
        {"fp32": 82.6, "tf32": 82.6, "bf16": 165.2, "fp16": 165.2, "fp8": 330.3, "memory": 1008.0},
    ),
    # AMD Instinct MI300X data sheet: 163.4 / 653.7 / 1,307.4 / 2,614.9 dense, 5.3 TB/s; sysfs mclk 1,300 MHz
    "MI300X": (
        DeviceProps("AMD Instinct MI300X", "gfx942:sramecc+:xnack-", 304, 2100, 1300, 8192),
        {"fp32": 163.4, "tf32": 653.7, "bf16": 1307.4, "fp16": 1307.4, "fp8": 2614.9, "memory": 5300.0},
    ),
    # Radeon 8060S (gfx1151): 40 CUs x 512 FLOP/clock x 2.9 GHz = 59.4 (lhl's notes)
    "gfx1151": (DeviceProps("AMD Radeon 8060S", "gfx1151", 40, 2900), {"bf16": 59.4, "fp16": 59.4}),
}


@pytest.mark.parametrize("model", sorted(FAKES))
def test_fake_devices_give_their_datasheet_peaks_within_3_percent(model: str) -> None:
    props, datasheet = FAKES[model]
    for what, value in datasheet.items():
        found = peak(props, what)
        assert isinstance(found, Peak), (model, what, found)
        assert abs(found.value / value - 1) <= TOLERANCE, (model, what, found.value, value)
        assert found.words.startswith("derived from ") and arch_key(props.arch) in found.words


def test_the_words_say_what_the_peak_was_derived_from() -> None:
    h100 = DeviceProps("NVIDIA H100 80GB HBM3", "sm_90", 132, 1980, 2619, 5120)
    bf16 = compute_peak(h100, "bf16")
    assert isinstance(bf16, Peak) and round(bf16.value, 1) == 989.4
    assert bf16.words.startswith("derived from 132 SMs x 1,830 MHz x 4,096 bf16 FLOP/clock (sm_90)")
    assert "1,980 MHz maximum" in bf16.words  # the datasheet rates tensor peaks below the driver's top clock
    fp32 = compute_peak(h100, "fp32")
    assert isinstance(fp32, Peak) and fp32.words == "derived from 132 SMs x 1,980 MHz x 256 fp32 FLOP/clock (sm_90)"
    memory = memory_peak(h100)
    assert isinstance(memory, Peak) and abs(memory.value - 3350) < 5


def test_a_geforce_board_halves_only_its_tensor_rates() -> None:
    pro = DeviceProps("NVIDIA RTX 6000 Ada Generation", "sm_89", 128, 2520)
    geforce = DeviceProps("NVIDIA GeForce RTX 4090", "sm_89", 128, 2520)
    for dtype, ratio in (("bf16", 0.5), ("fp8", 0.5), ("fp32", 1.0)):
        a, b = compute_peak(pro, dtype), compute_peak(geforce, dtype)
        assert isinstance(a, Peak) and isinstance(b, Peak) and b.value == pytest.approx(a.value * ratio)


def test_every_datasheet_peak_in_the_table_is_checked_or_says_why_not() -> None:
    rows = check_peaks({m.key: m.peaks for m in MODELS if m.vendor != "cpu"})
    checked = [r for r in rows if r.derived is not None]
    assert len(checked) >= 60
    off = [r for r in checked if not r.agrees]
    assert [(r.model, r.what) for r in off] == [("MI355X", "bf16")]  # the one declared exception, with its reason
    assert "MI350X" in off[0].words
    unchecked = {(r.model, r.what): r.words for r in rows if r.derived is None}
    assert all(w.startswith("not checked") or "not on record" in w for w in unchecked.values()), unchecked
    assert {m for m, _ in unchecked} <= {"GB200", "B200", "B300", "Radeon 8060S (Strix Halo)"}


@pytest.mark.parametrize(
    ("props", "words"),
    [
        (DeviceProps("NVIDIA RTX PRO 6000 Blackwell", "sm_120", 188, 2617), "no per-unit rates on record for sm_120"),
        (DeviceProps("Some GPU", "", 100, 2000), "no per-unit rates on record for an unknown architecture"),
        (DeviceProps("NVIDIA H100", "sm_90", None, 1980), "no SM/CU count or maximum clock"),
        (DeviceProps("NVIDIA T4", "sm_75", 40, 1590), "has no dense bf16 rate on record"),
    ],
)
def test_an_unknown_architecture_or_a_missing_fact_gets_no_peak_and_says_why(props: DeviceProps, words: str) -> None:
    found = compute_peak(props, "bf16")
    assert isinstance(found, NoPeak) and words in found.reason


def test_memory_is_not_guessed_where_the_clock_s_meaning_is_not_on_record() -> None:
    apu = DeviceProps("AMD Radeon 8060S", "gfx1151", 40, 2900, 1000, 256)
    found = memory_peak(apu)
    assert isinstance(found, NoPeak) and "not on record" in found.reason
    no_bus = memory_peak(DeviceProps("NVIDIA L40S", "sm_89", 142, 2520, 9001, None))
    assert isinstance(no_bus, NoPeak) and "bus width" in no_bus.reason


def test_a_figure_s_props_come_from_its_params_with_the_sampler_s_clock_as_fallback() -> None:
    params = {"gpu_arch": "sm_90", "gpu_units": 132, "gpu_name": "NVIDIA H100 80GB HBM3", "memory_bus_bits": 5120}
    props = props_of(params, {"sm_clock_max_mhz": 1980})
    assert props == DeviceProps("NVIDIA H100 80GB HBM3", "sm_90", 132, 1980.0, None, 5120)
    assert props_of({}, {"sm_clock_max_mhz": 1980}) is None  # no architecture: nothing to derive from


# -- the CPU: identified by what it can do --


@pytest.mark.parametrize(
    ("name", "flags", "machine", "capability"),
    [
        ("Intel(R) Xeon(R) Processor", ["avx2", "fma", "avx512f", "amx_bf16"], "x86_64", "Intel AVX-512"),
        ("Intel(R) Xeon(R) Processor", ["avx2", "fma"], "x86_64", "Intel AVX2+FMA"),  # the same brand, other units
        ("AMD EPYC 9654 96-Core Processor", ["avx2", "fma", "avx512f"], "x86_64", "AMD AVX-512"),
        ("AMD EPYC", ["avx2", "fma"], "x86_64", "AMD AVX2+FMA"),
        ("Neoverse-V2", [], "aarch64", "Arm NEON"),
        ("QEMU Virtual CPU", [], "x86_64", "x86 SSE"),
    ],
)
def test_a_cpu_is_identified_by_its_vector_units_not_its_brand(
    name: str, flags: list[str], machine: str, capability: str
) -> None:
    from rigcheck.engine.facts.cpu_reference import cpu_capability, cpu_model

    assert cpu_capability(name, flags, machine) == capability
    model = cpu_model(name, capability)
    assert (model is not None) == (capability == "Intel AVX-512")  # only the H200 host's units were measured
