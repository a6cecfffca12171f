"""The edges of engine/measure/leave_one_out.py (issue 45's mutation scoring): a miss at each side of a spread of
one half (0.5 and 2.0 are exact in binary), the table's rows as a reader sees them, and which entries are
predicted, on a small table built here: the H200 and H100 SXM each at a share of the same 989.4 TFLOP/s bf16
datasheet peak (80% and 72%), a CPU entry with a GPU-like name, a host link and a model with no specimen."""

from __future__ import annotations

import pytest
from rigcheck.engine.measure.leave_one_out import Prediction, predictable, predictions, table
from rigcheck.engine.measure.references import Reference


def row(actual: float, predicted: float | None, spread: float | None) -> Prediction:
    return Prediction("M", "matmul bf16 4096", actual, "TFLOP/s", "s", predicted, spread, "b")


@pytest.mark.parametrize(("actual", "miss"), [(0.4999, True), (0.5, False), (1.0, False), (2.0, False), (2.0001, True)])
def test_a_miss_is_outside_the_spread_on_either_side(actual: float, miss: bool) -> None:
    assert row(actual, 1.0, 0.5).miss is miss


def test_no_prediction_or_no_spread_is_never_a_miss() -> None:
    assert row(5.0, None, 0.5).ratio is None and row(5.0, None, 0.5).miss is False
    assert row(5.0, 1.0, None).ratio == 5.0 and row(5.0, 1.0, None).miss is False


def test_the_table_s_rows_as_a_reader_sees_them() -> None:
    rows = [
        Prediction("H200", "matmul bf16 4096", 1500.0, "TFLOP/s", "s", 1000.0, 0.2, "from its siblings"),
        Prediction("T4", "matmul fp16 4096", 12345.0, "TFLOP/s", "s", None, None, "no Turing model"),
        Prediction("H200", "matmul bf16 8192", 900.0, "TFLOP/s", "s", 1000.0, 0.15, "from its siblings"),
    ]
    assert table(rows).splitlines() == [
        "| model | figure | entry | predicted | entry / predicted | spread | result | basis |",
        "| --- | --- | ---: | ---: | ---: | ---: | --- | --- |",
        "| H200 | matmul bf16 4096 | 1,500 | 1,000 | 1.500 | 20% | MISS | from its siblings |",
        "| T4 | matmul fp16 4096 | 1.234e+04 | | | | not predicted | no Turing model |",
        "| H200 | matmul bf16 8192 | 900 | 1,000 | 0.900 | 15% | ok | from its siblings |",
    ]


def ref(model: str, figure: str, value: float, kind: str = "") -> Reference:
    return Reference(model, figure, value, "TFLOP/s", "rigcheck-measured", "src", f"{model} s", figure_kind=kind)


TABLE = (
    ref("H200", "matmul bf16 4096", 791.52, "matmul"),  # 80% of 989.4
    ref("H100 SXM", "matmul bf16 4096", 712.368, "matmul"),  # 72% of 989.4
    ref("Intel(R) Xeon(R) Processor", "matmul fp32 512", 900.0, "cpu matmul"),
    Reference("H200", "host to device pinned 1 GiB", 55.0, "GB/s", "published", "src", "s", figure_kind="host link"),
    ref("Mystery GPU", "matmul bf16 4096", 500.0, "matmul"),
)


def test_only_gpu_entries_a_share_can_hold_are_predicted() -> None:
    assert [predictable(r) for r in TABLE] == [True, True, False, False, True]
    # an entry with no kind recorded (the default, "") is judged by its name alone
    assert predictable(ref("H200", "matmul bf16 4096", 791.52)) is True
    assert predictable(ref("H200", "host to device pinned", 55.0)) is False


def test_each_entry_is_predicted_from_its_siblings_alone() -> None:
    found = {(p.model, p.figure): p for p in predictions(TABLE)}
    assert set(found) == {
        ("H200", "matmul bf16 4096"),
        ("H100 SXM", "matmul bf16 4096"),
        ("Mystery GPU", "matmul bf16 4096"),
    }
    h200 = found["H200", "matmul bf16 4096"]  # from the H100 SXM's 72% of the H200's own 989.4
    assert h200.predicted == pytest.approx(712.368) and h200.actual == 791.52 and h200.spread == 0.15
    assert (h200.unit, h200.source) == ("TFLOP/s", "H200 s")
    assert h200.basis == "Hopper share of its datasheet peak (H100 SXM H100 SXM s: 72% of its peak)"
    h100 = found["H100 SXM", "matmul bf16 4096"]
    assert h100.predicted == pytest.approx(791.52) and h100.miss is False  # 0.9 of it, within 15%
    mystery = found["Mystery GPU", "matmul bf16 4096"]  # no specimen: no architecture to carry a share to
    assert mystery.predicted is None and mystery.spread is None and mystery.actual == 500.0
    assert mystery.basis == "no per-unit rates on record for an unknown architecture"


def test_a_prediction_is_a_value_hashable_and_never_changed() -> None:
    found = row(1.0, 1.0, 0.5)
    assert hash(found) == hash(row(1.0, 1.0, 0.5))
    with pytest.raises(AttributeError):
        found.predicted = 2.0  # type: ignore[misc]
