"""Every GPU figure judged against its architecture where its model has no entry of its own: a fake L40S (no
entries) with a figure 40% slow is named by its figure, with its basis; an H100 SXM whose figures sit at the H200's
shares has every matmul, max-find, copy and training figure judged, with no WARN; an unknown architecture is NOT
JUDGED with the reason; each with the threshold's edge on both sides."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.measure.arch_peaks import DeviceProps, Peak, peak
from rigcheck.engine.measure.arch_shares import CROSS_SPREAD, classify
from rigcheck.engine.measure.board_roofline import roofline
from rigcheck.engine.measure.references import REFERENCES, model_of
from rigcheck.engine.trust.expect_arch import figure_expectation
from rigcheck.engine.trust.expectations import expectation_verdicts
from rigcheck.engine.trust.reference import reference_verdicts

L40S = DeviceProps("NVIDIA L40S", "sm_89", 142, 2520, 9001, 384)
H100 = DeviceProps("NVIDIA H100 80GB HBM3", "sm_90", 132, 1980, 2619, 5120)
H200 = DeviceProps("NVIDIA H200", "sm_90", 132, 1980, 3201, 6144)
UNKNOWN = DeviceProps("NVIDIA RTX PRO 6000 Blackwell", "sm_120", 188, 2617, 14001, 512)


def figure(props: DeviceProps, name: str, value: float, stage: str = "matmul") -> Measurement:
    unit = "samples/s" if name.startswith("train") else "GB/s" if "copy" in name else "TFLOP/s"
    params: dict[str, Any] = {"timer": "events", "gpu_name": props.name, "gpu_arch": props.arch}
    params |= {"gpu_units": props.units, "sm_clock_max_mhz": props.sm_clock_max_mhz}
    params |= {"mem_clock_max_mhz": props.mem_clock_max_mhz, "memory_bus_bits": props.memory_bus_bits}
    conditions = {"gpu_name": props.name, "trust": "TRUSTED", "samples": 9}
    return Measurement(stage, name, value, unit, 0.01, 10, "cuda:0", params, conditions)


def expected_value(props: DeviceProps, name: str) -> float:
    found = figure_expectation(figure(props, name, 1.0))
    assert found.value is not None, found.basis
    return found.value


# -- a GPU the table does not list --


def test_a_fake_l40s_figure_40_percent_slow_is_named_by_its_figure_with_its_basis() -> None:
    expected = expected_value(L40S, "matmul bf16 4096")
    assert 250 < expected < 330  # the Hopper share (80%) of the L40S's derived 366 TFLOP/s
    (slow,) = [v for v in reference_verdicts([figure(L40S, "matmul bf16 4096", 0.6 * expected)], "matmul")]
    assert slow.status == Status.WARN and slow.check == "reference matmul bf16 4096"
    assert "cuda:0 matmul bf16 4096" in slow.explanation and "60% of the" in slow.explanation
    assert "Hopper share carried to Ada" in slow.explanation
    assert slow.numbers["derived"] is True and "Ada" in slow.numbers["basis"]
    assert "derived from 142 SMs x 2,520 MHz x 1,024 bf16 FLOP/clock (sm_89)" in slow.numbers["source"]


@pytest.mark.parametrize(
    ("share", "status"), [(1.0, Status.PASS), (0.71, Status.PASS), (0.69, Status.WARN), (0.2, Status.WARN)]
)
def test_the_l40s_edge_sits_at_its_coarse_spread_and_a_carried_share_never_fails(share: float, status: Status) -> None:
    assert CROSS_SPREAD == 0.30
    expected = expected_value(L40S, "matmul bf16 4096")
    verdicts = list(reference_verdicts([figure(L40S, "matmul bf16 4096", share * expected)], "matmul"))
    assert verdicts[0].status == status  # far below a share carried across architectures is named, never failed


def test_an_l40s_training_figure_is_not_judged_by_another_architecture_s_share() -> None:
    found = figure_expectation(figure(L40S, "train c128 b256 bf16", 1e4, "training"))
    assert found.value is None and "not carried across architectures" in found.basis


# -- an unknown architecture --


def test_an_unknown_architecture_is_not_judged_and_says_why() -> None:
    figures = [figure(UNKNOWN, "matmul bf16 4096", 400.0)]
    assert list(reference_verdicts(figures, "matmul")) == []
    (count,) = [v for v in expectation_verdicts(figures, "matmul") if v.check == "expectations"]
    assert count.status == Status.NOT_JUDGED
    assert "no per-unit rates on record for sm_120" in count.explanation


# -- an H100 SXM at the H200's shares --


def h200_share_figures() -> list[Measurement]:
    """Every GPU figure the H200 has an entry for (matmul, copy, training), plus max-find's shapes, on an H100 at
    the H200's share of its peak (what a healthy H100 reaches, if shares carry)."""
    out = []
    for r in REFERENCES:
        fig = classify(r.figure)
        if r.model != "H200" or fig is None or r.size == "any" or r.figure.startswith("best-"):
            continue
        mine, theirs = peak(H100, fig.peak_of), peak(H200, fig.peak_of)
        assert isinstance(mine, Peak) and isinstance(theirs, Peak)
        scale = mine.value / theirs.value
        if fig.kind == "training":  # a share of the board network's roofline on each GPU's peaks
            m100, m200 = peak(H100, "memory"), peak(H200, "memory")
            assert isinstance(m100, Peak) and isinstance(m200, Peak)
            h100 = roofline(fig.channels or 0, fig.precision, mine.value, m100.value)
            h200 = roofline(fig.channels or 0, fig.precision, theirs.value, m200.value)
            scale = h100 / h200
        stage = "training" if fig.kind == "training" else "bandwidth" if fig.kind == "device copy" else "matmul"
        out.append(figure(H100, r.figure, r.value * scale, stage))
    mamf = next(r for r in REFERENCES if r.model == "H200" and r.figure == "best-bf16")
    for shape, share in (("2048x8192x16384", 1.0), ("1024x8192x8192", 0.97), ("4096x4096x8192", 0.95)):
        out.append(figure(H100, f"max-find bf16 {shape}", mamf.value * share))
    return out


def test_an_h100_at_the_h200_s_shares_has_every_figure_judged_with_no_warn() -> None:
    assert model_of(H100.name, 132, "sm_90").key == "H100 SXM"  # type: ignore[union-attr]
    figures = h200_share_figures()
    assert {classify(m.name).kind for m in figures} == {"matmul", "max-find", "device copy", "training"}  # type: ignore[union-attr]
    assert len(figures) >= 30
    for stage in ("matmul", "bandwidth", "training"):
        mine = [m for m in figures if m.stage == stage]
        verdicts = [*reference_verdicts(mine, stage), *expectation_verdicts(mine, stage, run_figures=figures)]
        assert [v.explanation for v in verdicts if v.status != Status.PASS] == []
        (count,) = [v for v in verdicts if v.check == "expectations"]
        assert count.numbers["not_judged"] == 0 and count.numbers["judged"] == len(mine)
        (summary,) = [v for v in verdicts if v.check == "reference"]
        assert f"{len(mine)} figure(s) within" in summary.explanation
        against = {"bandwidth": "their model's reference", "training": "of their architecture's reference"}.get(
            stage, "their model's or their architecture's"
        )
        assert against in summary.explanation  # the copy has the H100's own (DCGM) entry
    bases = {figure_expectation(m).basis for m in figures}
    assert any(b.startswith("Hopper share of its datasheet peak (H200 rigcheck-measured, 3 runs") for b in bases)
    assert any(b.startswith("Hopper share of its datasheet roofline (H200 rigcheck-measured") for b in bases)
    assert "H100 SXM published MAMF, ml-engineering" in bases  # its own entry comes first, for max-find too


def test_an_h100_figure_15_percent_under_its_carried_share_is_named_and_14_is_not() -> None:
    expected = expected_value(H100, "matmul bf16 4096")
    for share, status in ((0.86, Status.PASS), (0.84, Status.WARN), (0.49, Status.FAIL)):
        (first, *_) = reference_verdicts([figure(H100, "matmul bf16 4096", share * expected)], "matmul")
        assert first.status == status, (share, first.explanation)


def test_a_live_run_can_leave_a_model_s_own_entries_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """RIGCHECK_LEAVE_OUT=H200: the H200 judged as if unlisted, from its siblings (the H100's and GH200's MAMF)."""
    m = figure(H200, "max-find bf16 2048x8192x16384", 800.0)
    assert figure_expectation(m).basis == "H200 published MAMF, ml-engineering"
    monkeypatch.setenv("RIGCHECK_LEAVE_OUT", "H200")
    left = figure_expectation(m)
    assert left.derived and left.basis.startswith("Hopper share of its derived peak (GH200 published MAMF")
    assert " H200 " not in left.basis and "H100 SXM published MAMF" in left.basis
    gone = figure_expectation(figure(H200, "matmul bf16 4096", 790.0))
    assert gone.value is None and "no Hopper model" in gone.basis  # its own measured shares are out with it
