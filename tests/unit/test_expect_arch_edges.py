"""The edges of engine/trust/expect_arch.py (issue 45's mutation scoring): which figures have a GPU to be judged
on, the basis a user reads for each kind of expectation (its model's entry, a baseline, its architecture's share),
and the stored ratio. Values are the table's own entries (H200 matmul bf16 4096: 792.1 TFLOP/s), worked by hand."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.events import Measurement
from rigcheck.engine.trust.expect_arch import figure_expectation, figure_reference

H200 = "NVIDIA H200"
H200_PROPS = {"gpu_arch": "sm_90", "gpu_units": 132, "sm_clock_max_mhz": 1980, "mem_clock_max_mhz": 3201}
H200_PROPS |= {"memory_bus_bits": 6144}
L40S_PROPS = {"gpu_arch": "sm_89", "gpu_units": 142, "sm_clock_max_mhz": 2520, "mem_clock_max_mhz": 9001}
L40S_PROPS |= {"memory_bus_bits": 384}


def fig(
    value: float,
    name: str = "matmul bf16 4096",
    device: str = "cuda:0",
    conditions: dict[str, Any] | None = None,
    **params: Any,
) -> Measurement:
    return Measurement("matmul", name, value, "TFLOP/s", 0.01, 10, device, params, conditions)


def test_a_figure_of_its_model_s_own_entry_has_that_entry_as_its_basis() -> None:
    found = figure_expectation(fig(500.0, conditions={"gpu_name": H200}))
    assert found.value == 792.1 and found.derived is False
    assert found.basis == "H200 rigcheck-measured, 3 runs, 2026-12-03"
    assert found.ratio == 0.6312  # 500 / 792.1 = 0.63123...
    assert found.reference is not None and found.reference.value == 792.1
    assert figure_reference(fig(500.0, conditions={"gpu_name": H200})) == found.reference


def test_a_figure_measured_again_has_the_same_expectation() -> None:
    found = figure_expectation(fig(500.0, "matmul bf16 4096 again", conditions={"gpu_name": H200}))
    assert found.value == 792.1 and found.basis == "H200 rigcheck-measured, 3 runs, 2026-12-03"


def test_a_baseline_figure_is_named_as_the_baseline() -> None:
    baseline = {"figures": {f"{H200}/matmul bf16 4096": {"value": 800.0, "unit": "TFLOP/s"}}, "source": "box 7"}
    found = figure_expectation(fig(400.0, conditions={"gpu_name": H200}), baseline)
    assert found.value == 800.0 and found.ratio == 0.5 and found.derived is False
    assert found.basis == f"{H200} the baseline" and found.source == "box 7"


def test_a_carried_share_is_derived_and_its_basis_is_the_share_s() -> None:
    found = figure_expectation(fig(100.0, conditions={"gpu_name": "NVIDIA L40S"}, **L40S_PROPS))
    assert found.derived is True and found.value is not None
    assert found.basis.startswith("Hopper share carried to Ada (no Ada model measured; coarse: ")
    assert found.reference is not None and found.reference.kind == "expected"


@pytest.mark.parametrize(
    ("where", "params"),
    [("conditions", {}), ("params", {"gpu_name": H200}), ("params", {"device_name": H200})],
)
def test_the_gpu_is_named_by_its_conditions_else_its_params(where: str, params: dict[str, Any]) -> None:
    conditions = {"gpu_name": H200} if where == "conditions" else {}
    found = figure_expectation(fig(500.0, conditions=conditions, **params))
    assert found.value == 792.1


@pytest.mark.parametrize(
    ("device", "conditions", "params"),
    [
        ("cpu", {"gpu_name": H200}, {}),
        ("rocm:0", {"gpu_name": H200}, {}),
        ("cuda:0", {}, {}),
        ("cuda:0", {"gpu_name": ""}, {"gpu_name": None}),
        ("cuda:0", None, {}),
    ],
)
def test_a_figure_with_no_named_gpu_has_no_expectation_and_says_why(
    device: str, conditions: dict[str, Any] | None, params: dict[str, Any]
) -> None:
    found = figure_expectation(fig(500.0, device=device, conditions=conditions, **params))
    assert (found.value, found.ratio, found.derived, found.source, found.reference) == (None, None, False, "", None)
    assert found.basis == "none: not a GPU figure, or its GPU is unnamed"


def test_a_gpu_with_no_entry_and_no_props_says_why() -> None:
    found = figure_expectation(fig(500.0, conditions={"gpu_name": "NVIDIA L40S"}))
    assert found.value is None and found.ratio is None and found.derived is False and found.reference is None
    assert found.basis == (
        "none: no entry for NVIDIA L40S, and its stage recorded no architecture, SMs and clocks to derive one"
    )


@pytest.mark.parametrize(("value", "ratio"), [(0.5, 0.0006), (0.0, None), (-1.0, None), (792.1, 1.0)])
def test_the_stored_ratio_is_to_four_places_and_none_for_no_figure(value: float, ratio: float | None) -> None:
    assert figure_expectation(fig(value, conditions={"gpu_name": H200})).ratio == ratio


def test_the_h200_props_do_not_change_its_own_entry() -> None:
    found = figure_expectation(fig(500.0, conditions={"gpu_name": H200}, **H200_PROPS))
    assert found.value == 792.1 and not found.derived


def test_a_kind_read_back_as_text_is_the_same_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reference whose kind is equal to "baseline" or "expected" but not the same object (read from a file)."""
    from rigcheck.engine.measure.references import Reference
    from rigcheck.engine.trust import expect_arch

    baseline_kind = "".join(["base", "line"])
    found = Reference(H200, "matmul bf16 4096", 800.0, "TFLOP/s", baseline_kind, "a box", "box")
    monkeypatch.setattr(expect_arch, "lookup", lambda *_: found)
    got = figure_expectation(fig(400.0, conditions={"gpu_name": H200}))
    assert (got.basis, got.derived) == ("NVIDIA H200 the baseline", False)
    expected_kind = "".join(["expec", "ted"])
    carried = Reference(H200, "matmul bf16 4096", 800.0, "TFLOP/s", expected_kind, "s", "Hopper share of its peak")
    monkeypatch.setattr(expect_arch, "lookup", lambda *_: carried)
    got = figure_expectation(fig(400.0, conditions={"gpu_name": H200}))
    assert (got.basis, got.derived) == ("Hopper share of its peak", True)


def test_an_expectation_is_a_value_hashable_and_never_changed() -> None:
    found = figure_expectation(fig(500.0, conditions={"gpu_name": H200}))
    assert len({found, figure_expectation(fig(500.0, conditions={"gpu_name": H200}))}) == 1
    with pytest.raises(AttributeError):
        found.value = 1.0  # type: ignore[misc]
