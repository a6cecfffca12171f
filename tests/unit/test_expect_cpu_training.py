"""A CPU training figure judged like a CPU matmul figure (issue 40, item 5): its limit is the host's cores x clock x
FLOP/cycle over the board network's FLOPs per sample, and the share of that limit a CPU of the same vector units
reached is what is expected of it; the table's check of such an entry; a name that is no training figure."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.measure.board_roofline import figure_flops
from rigcheck.engine.measure.plausibility import Limit
from rigcheck.engine.measure.references import Model, Reference, entry_problems
from rigcheck.engine.stages.common import limits
from rigcheck.engine.trust.expect_cpu import cpu_verdict

EPYC = "AMD EPYC 9454 48-Core Processor"
# The board network's c64 sample by hand: 6 blocks x 2 convs of 2 x 9 x 64 x 64 x 49, the 12-plane input conv
# 2 x 9 x 12 x 64 x 49, forward and backward (x3).
C64_FLOPS = 3 * (6 * 2 * (2 * 9 * 64 * 64 * 49) + 2 * 9 * 12 * 64 * 49)
MODEL = Model("AMD EPYC 9454", r"\bEPYC 9454\b", "cpu", peaks={"cpu_fp32": 3891.2}, peak_source="16 CPUs")


def entry(value: float = 7000.0, peak: float | None = 3891.2, peak_of: str = "cpu_fp32") -> Reference:
    return Reference(
        "AMD EPYC 9454", "train c64 b256 fp32", value, "samples/s", "rigcheck-measured", "y" * 40,
        "rigcheck-measured, 3 runs", "cpu training", "c64 b256", peak, peak_of, 0.6,
    )  # fmt: skip


@pytest.fixture(autouse=True)
def epyc_in_table(monkeypatch: pytest.MonkeyPatch) -> None:
    from rigcheck.engine.measure import references

    monkeypatch.setattr(references, "MODELS", (*references.MODELS, MODEL))
    monkeypatch.setattr(references, "REFERENCES", (*references.REFERENCES, entry()))


def figure(value: float, limit: Any, **params: Any) -> Measurement:
    given: dict[str, Any] = {"bound": "host", "limit": limit, "limit_basis": "8 CPUs x 3,800 MHz", "threads": 8}
    return Measurement(
        "training", "train c64 b256 fp32", value, "samples/s", None, 20, "cpu", given | params, {"trust": "TRUSTED"}
    )


# A host with half the measured one's compute (1,945.6 GFLOP/s): its limit in c64 samples/s, and half the entry's
# 7,000 samples/s expected of it.
HALF_LIMIT = 1945.6e9 / C64_FLOPS


def test_the_flops_of_a_training_figure_by_hand() -> None:
    assert figure_flops("train c64 b256 fp32") == pytest.approx(C64_FLOPS)
    assert figure_flops("train c64 b8192 bf16 compiled") == pytest.approx(C64_FLOPS)  # same convs in bf16
    c128 = 3 * (6 * 2 * (2 * 9 * 128 * 128 * 49) + 2 * 9 * 12 * 128 * 49)
    assert figure_flops("train c128 b256 fp32") == pytest.approx(c128)
    for other in ("matmul fp32 512", "train", "train cx b256 fp32", "train c64 b256 fp64"):
        assert figure_flops(other) is None


def test_a_cpu_training_figure_at_its_share_passes_with_its_numbers() -> None:
    found = cpu_verdict(figure(3500.0, HALF_LIMIT), "training", EPYC)
    assert found is not None and found.status == Status.PASS
    assert found.check == "cpu train c64 b256 fp32"
    assert found.numbers["expected"] == pytest.approx(3500.0, rel=1e-4)
    assert found.numbers["achievable"] == pytest.approx(round(7000.0 * C64_FLOPS / 1e9 / 3891.2, 4))
    assert found.explanation.startswith("cpu train c64 b256 fp32 3,500 samples/s: ")
    assert "1.00x of the 3,500 expected" in found.explanation


def test_a_slow_cpu_training_figure_is_named_at_the_entrys_edge() -> None:
    edge = cpu_verdict(figure(0.6001 * 3500.0, HALF_LIMIT), "training", EPYC)
    assert edge is not None and edge.status == Status.PASS  # at warn_below (the share is computed in floats)
    below = cpu_verdict(figure(0.59 * 3500.0, HALF_LIMIT, threads=2), "training", EPYC)
    assert below is not None and below.status == Status.WARN
    assert "0.59x of the 3,500 expected" in below.explanation and "with 2 thread(s)" in below.explanation


def test_a_cpu_training_figure_without_a_limit_is_not_judged() -> None:
    assert cpu_verdict(figure(3500.0, None), "training", EPYC) is None


def test_the_tables_check_of_a_cpu_training_entry() -> None:
    models = (MODEL,)
    assert entry_problems(entry(), models) == []  # 7,000 x 132 MFLOP = 924.6 GFLOP/s, 24% of 3,891.2
    assert any("is not one of ('cpu_fp32',)" in p for p in entry_problems(entry(peak_of="cpu_bf16"), models))
    assert any("not the model's cpu_fp32" in p for p in entry_problems(entry(peak=3000.0), models))
    low = 0.01 * 3891.2e9 / C64_FLOPS  # 1% of the peak: a slip
    assert any("is 1% of its peak" in p for p in entry_problems(entry(value=low), models))
    high = 1.2 * 3891.2e9 / C64_FLOPS  # over the peak
    assert any("is 120% of its peak" in p for p in entry_problems(entry(value=high), models))
    assert entry_problems(entry(value=0.21 * 3891.2e9 / C64_FLOPS), models) == []  # just inside the range


def test_the_stage_gives_a_cpu_training_figure_its_compute_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(limits, "cpu_limit", lambda dtype: Limit(1945.6, "8 CPUs x 3,800 MHz x 64 fp32 FLOP/cycle"))
    found = limits.cpu_training_limit(64, "fp32")
    assert found is not None and found.value == pytest.approx(HALF_LIMIT)
    assert found.basis == "8 CPUs x 3,800 MHz x 64 fp32 FLOP/cycle, over 132 MFLOP per c64 sample"
    monkeypatch.setattr(limits, "cpu_limit", lambda dtype: None)
    assert limits.cpu_training_limit(64, "fp32") is None


def test_the_tables_avx512_training_entries_judge_another_avx512_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """The H200 host's three runs (5,517 samples/s at c64 b256 on 3,225.6 GFLOP/s) judge a 16-CPU AVX-512 host of the
    same limit: its own 5,924 passes; a third of it is named; an AVX2 host has no entry to be judged by."""
    from rigcheck.engine.facts import cpu_reference

    xeon = "Intel(R) Xeon(R) Processor"
    limit = 3225.6e9 / C64_FLOPS
    monkeypatch.setattr(cpu_reference, "this_capability", lambda: "Intel AVX-512")
    found = cpu_verdict(figure(5924.0, limit), "training", xeon)
    assert found is not None and found.status == Status.PASS
    assert found.numbers["expected"] == pytest.approx(5517.2, rel=1e-4)
    assert found.numbers["source"].startswith("the CPU")
    assert "Intel(R) Xeon(R) Processor (Intel AVX-512)" in found.explanation
    slow = cpu_verdict(figure(0.33 * 5517.2, limit), "training", xeon)
    assert slow is not None and slow.status == Status.WARN
    monkeypatch.setattr(cpu_reference, "this_capability", lambda: "Intel AVX2+FMA")
    assert cpu_verdict(figure(5924.0, limit), "training", xeon) is None
