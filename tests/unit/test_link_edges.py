"""A pinned host copy against the PCIe link it crossed (engine/trust/expect_link.py), at its edges, with each number
worked out by hand: a Gen5 lane carries 3.938 GB/s one way after encoding (x16: 63.008), a Gen4 lane 1.969 (x16:
31.504); a copy is expected at 80% of its link (Gen5 x16: 50.4064), a PASS from 85% of that (42.845), a FAIL below
half of it (25.203). Which reading is "trained down", whose bus the next step names, which figures are no result."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.trust.expect_link import link_verdict
from test_expectations import GEN5_X16, copy

GEN5_X8 = {"gen": 5, "width": 8, "max_gen": 5, "max_width": 16}
RIVAL = "another process that rigcheck cannot see is using cuda:0: 874 MiB, GPU busy 100%"


def without_bus(m: Measurement, **conditions: Any) -> Measurement:
    params = {k: v for k, v in m.params.items() if k != "pci_bus_id"}
    return replace(m, params=params, conditions=m.conditions | conditions)


def test_a_copy_at_its_full_link_passes_with_every_number_written_out() -> None:
    verdict = link_verdict(copy(55.2, pcie=GEN5_X16), "bandwidth")
    assert verdict is not None and verdict.status == Status.PASS
    assert verdict.explanation == (
        "cuda:0 host to device pinned 1 GiB 55.2 GB/s: 88% of its Gen5 x16 link (63), expected 80-88% "
        "(nvbandwidth and SuperBench)"
    )
    assert (verdict.stage, verdict.check, verdict.device) == ("bandwidth", "link host to device pinned 1 GiB", "cuda:0")
    assert verdict.tolerance == pytest.approx(0.15)
    numbers = {k: verdict.numbers[k] for k in ("value", "link", "link_max", "link_gbs", "share_of_link", "expected")}
    assert numbers == {
        "value": 55.2,
        "link": "Gen5 x16",
        "link_max": "Gen5 x16",
        "link_gbs": 63.01,  # 16 x 3.938
        "share_of_link": 0.8761,  # 55.2 / 63.008
        "expected": 50.41,  # 0.8 x 63.008
    }
    assert verdict.numbers["source"] == "nvbandwidth and SuperBench" and verdict.numbers["under_load"] is True
    assert "trained_down" not in verdict.numbers


def test_a_link_trained_down_in_width_at_idle_names_the_bus_its_telemetry_read() -> None:
    figure = without_bus(copy(27.0, direction="d2h", pcie=GEN5_X8), gpu_pci_bus_id="0000:c1:00.0")
    verdict = link_verdict(figure, "bandwidth")
    assert verdict is not None and verdict.status == Status.WARN and verdict.tolerance is None
    assert verdict.explanation == (
        "cuda:0's link runs at Gen5 x8 of Gen5 x16 (at idle, and it could not be read under load): D2H 27 GB/s, "
        "half of what this card carries (43% of 63); next: reseat the card, check the slot's BIOS bifurcation and "
        "riser, then `lspci -vv -s 0000:c1:00.0 | grep -i lnksta`"
    )
    assert verdict.numbers["trained_down"] is True and verdict.numbers["under_load"] is False
    assert (verdict.numbers["link"], verdict.numbers["share_of_link"]) == ("Gen5 x8", 0.4285)  # 27 / 63.008
    unnamed = link_verdict(without_bus(copy(27.0, pcie=GEN5_X8)), "bandwidth")
    assert unnamed is not None and unnamed.explanation.endswith("then `lspci -vv -s BUS | grep -i lnksta`")


def test_a_copy_of_no_known_direction_is_named_by_its_figure() -> None:
    figure = copy(13.4, pcie=GEN5_X8 | {"under_load": True})
    figure = replace(figure, params=figure.params | {"direction": None})
    verdict = link_verdict(figure, "bandwidth")
    assert (
        verdict is not None and "(while copying): host to device pinned 1 GiB 13.4 GB/s, half of" in verdict.explanation
    )


def test_a_link_trained_down_with_someone_else_s_load_on_it_is_inconclusive_and_names_no_reseat() -> None:
    busy = copy(27.0, pcie=GEN5_X8, trust="SUSPECT")
    busy = replace(busy, conditions=busy.conditions | {"trust_reasons": [RIVAL], "trust_outside": [RIVAL]})
    verdict = link_verdict(busy, "bandwidth")
    assert verdict is not None and verdict.status == Status.INCONCLUSIVE
    assert verdict.explanation.startswith(
        "cuda:0's link runs at Gen5 x8 of Gen5 x16 (at idle, and it could not be read under load): H2D 27 GB/s, half "
        f"of what this card carries (43% of 63); could not be judged: {RIVAL}"
    )
    assert "reseat" not in verdict.explanation and verdict.numbers["trained_down"] is True


@pytest.mark.parametrize(
    ("pcie", "link", "trained_down"),
    [
        ({"max_gen": 5, "max_width": 16}, "Gen5 x16", False),  # now unread: taken as its maximum
        ({"gen": 4, "max_gen": 5, "max_width": 16}, "Gen4 x16", True),  # width unread: its maximum, gen lower
        ({"width": 4, "max_gen": 5, "max_width": 16}, "Gen5 x4", True),  # gen unread
        ({"gen": 7, "width": 16, "max_gen": 5, "max_width": 16}, "Gen7 x16", False),  # a gen no table knows
    ],
)
def test_what_the_link_runs_at_now_where_part_of_it_was_not_read(
    pcie: dict[str, int], link: str, trained_down: bool
) -> None:
    verdict = link_verdict(copy(12.0, pcie=pcie), "bandwidth")
    assert verdict is not None and verdict.numbers["link"] == link
    assert verdict.numbers.get("trained_down", False) is trained_down
    assert verdict.explanation.startswith("cuda:0's link runs at") is trained_down


def test_a_link_read_faster_than_its_maximum_is_judged_against_its_maximum() -> None:
    faster = {"gen": 5, "width": 16, "max_gen": 4, "max_width": 16, "under_load": True}
    verdict = link_verdict(copy(30.0, pcie=faster), "bandwidth")
    assert verdict is not None and verdict.status == Status.PASS and "trained_down" not in verdict.numbers
    assert verdict.explanation.startswith("cuda:0 host to device pinned 1 GiB 30 GB/s: 95% of its Gen4 x16 link (31.5)")
    assert verdict.numbers["expected"] == 25.2  # 0.8 x 31.504


def test_a_link_read_flat_from_the_conditions_is_judged_and_not_called_read_under_load() -> None:
    flat = copy(55.2)
    flat = replace(flat, conditions=flat.conditions | {"pcie_link_gen": 5, "pcie_link_width": 16})
    flat = replace(flat, conditions=flat.conditions | {"pcie_link_max_gen": 5, "pcie_link_max_width": 16})
    verdict = link_verdict(flat, "bandwidth")
    assert verdict is not None and verdict.status == Status.PASS and verdict.numbers["under_load"] is False
    nested = link_verdict(copy(55.2, pcie={"gen": 5, "width": 16, "max_gen": 5, "max_width": 16}), "bandwidth")
    assert nested is not None and nested.numbers["under_load"] is False


@pytest.mark.parametrize(
    ("trust", "share", "status"),
    [
        ("SUSPECT", 0.3, Status.WARN),  # a FAIL is for a figure measured clean
        ("SUSPECT", 0.7, Status.WARN),
        ("SUSPECT", 0.95, Status.PASS),
        ("NOISY", 0.3, Status.FAIL),
        ("TRUSTED", 0.3, Status.FAIL),
    ],
)
def test_only_a_suspect_figure_s_fail_is_softened(trust: str, share: float, status: Status) -> None:
    verdict = link_verdict(copy(share * 50.4064, pcie=GEN5_X16, trust=trust), "bandwidth")
    assert verdict is not None and verdict.status == status


def test_copies_that_are_no_result_or_have_no_link_to_judge_them_by_are_left_alone() -> None:
    fine = copy(55.2, pcie=GEN5_X16)
    assert link_verdict(fine, "bandwidth") is not None
    for figure in (
        replace(fine, device="cpu"),
        replace(fine, params=fine.params | {"bound": "memory"}),
        replace(fine, params=fine.params | {"pinned": False}),
        replace(fine, params=fine.params | {"broken": True}),
        replace(fine, value=0.0),
        replace(fine, value=-1.0),
        copy(55.2, pcie={"gen": 5, "width": 16, "max_gen": 0, "max_width": 16}),
        copy(55.2, pcie={"gen": 5, "width": 16, "max_gen": 5, "max_width": 0}),
        copy(55.2, pcie={"gen": 5, "width": 16, "max_gen": 9, "max_width": 16}),  # a generation no table knows
    ):
        assert link_verdict(figure, "bandwidth") is None, figure
    assert link_verdict(replace(fine, value=0.01), "bandwidth").status == Status.FAIL  # type: ignore[union-attr]


def test_a_copy_at_exactly_half_of_what_its_link_should_carry_is_a_warn_not_a_fail() -> None:
    expected = 0.8 * (3.938 * 16)  # 80% of a Gen5 x16 link
    at_half = link_verdict(copy(expected / 2, pcie=GEN5_X16), "bandwidth")
    assert at_half is not None and at_half.status == Status.WARN
    below = link_verdict(copy(expected / 2 * 0.999, pcie=GEN5_X16), "bandwidth")
    assert below is not None and below.status == Status.FAIL


def test_a_link_read_at_a_higher_generation_than_its_maximum_but_narrower_is_trained_down() -> None:
    odd = {"gen": 5, "width": 4, "max_gen": 4, "max_width": 16, "under_load": True}  # 4 x 3.938 of 16 x 1.969
    verdict = link_verdict(copy(12.0, pcie=odd), "bandwidth")
    assert verdict is not None and verdict.numbers.get("trained_down") is True
    assert verdict.explanation.startswith(
        "cuda:0's link runs at Gen5 x4 of Gen4 x16 (while copying): H2D 12 GB/s, half of what this card carries"
    )
