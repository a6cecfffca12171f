"""The one cause function at each edge: a power limit at 98% of its default (lowered below it, not at it), the SM
and memory clocks at 90%, each vendor's next step, which GPU rivals are the cause, a setting chosen by the side of
its expectation the figure is on, the host link at or below its top, and the fall-through causes in their order."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.facts.settings import InForce
from rigcheck.engine.trust.cause import Cause, Expectation, likely_cause, pcie_link, split_reason, vendor_of
from rigcheck.engine.trust.view import Conditions


def fig(bound: str = "compute", value: float = 500.0, params: dict | None = None, **conditions: Any) -> Measurement:
    c = {"samples": 9, "trust": "TRUSTED", "gpu_name": "NVIDIA H200"} | conditions
    p = {"bound": bound} | (params or {})
    return Measurement("matmul", "matmul bf16 8192", value, "TFLOP/s", None, 20, "cuda:0", p, c)


@pytest.mark.parametrize(("limit", "kind"), [(685.0, "held"), (686.0, "nothing"), (700.0, "nothing")])
def test_a_power_limit_is_lowered_below_98_percent_of_its_default(limit: float, kind: str) -> None:
    found = likely_cause(fig(power_limit_w=limit, power_default_limit_w=700.0))  # 98% of 700 is 686
    assert found.kind == kind
    if kind == "held":
        assert found.text == "power limit lowered to 685 of its default 700 W"
        assert found.next_step == "restore it: `nvidia-smi -pl 700`"
    amd = likely_cause(fig(power_limit_w=600.0, power_default_limit_w=700.0, gpu_vendor="AMD"))
    assert amd.next_step == "restore the default power cap"
    assert likely_cause(fig(power_limit_w=600.0)).kind == "nothing"  # no default read: nothing to compare


@pytest.mark.parametrize(("ratio", "kind"), [(0.89, "clocks"), (0.9, "nothing"), (0.91, "nothing")])
def test_the_sm_clock_is_the_cause_below_90_percent_of_a_compute_bound_figure(ratio: float, kind: str) -> None:
    found = likely_cause(fig(clock_ratio=ratio, throttle=["idle", "sw power cap"]))
    assert found.kind == kind
    if kind == "clocks":
        assert found.text == "SM clock at 89% of max (sw power cap)"
        assert found.next_step == "`nvidia-smi -q -d PERFORMANCE,POWER,CLOCK`"
    assert likely_cause(fig("memory", clock_ratio=0.5)).kind == "nothing"  # the SM clock does not bound a copy


@pytest.mark.parametrize(("ratio", "kind"), [(0.89, "clocks"), (0.9, "nothing")])
def test_the_memory_clock_is_the_cause_below_90_percent_of_a_memory_bound_figure(ratio: float, kind: str) -> None:
    found = likely_cause(fig("memory", mem_clock_ratio=ratio))
    assert found.kind == kind
    if kind == "clocks":
        assert (found.text, found.next_step) == ("memory clock at 89% of max", "`nvidia-smi -q -d CLOCK`")
    assert likely_cause(fig("compute", mem_clock_ratio=0.5)).kind == "nothing"


@pytest.mark.parametrize(
    ("conditions", "bound", "amd_step"),
    [
        ({"clock_ratio": 0.5}, "compute", "`rocm-smi --showclocks --showpower --showperflevel`"),
        ({"mem_clock_ratio": 0.5}, "memory", "`rocm-smi --showclocks`"),
        ({"throttle": ["hardware thermal slowdown"]}, "compute", "`rocm-smi --showtemp --showperflevel`; check the"),
        ({"throttle": ["power brake"]}, "compute", "`rocm-smi --showpower --showperflevel`; check the board's"),
    ],
)
def test_each_next_step_names_the_vendor_s_tool(conditions: dict, bound: str, amd_step: str) -> None:
    assert likely_cause(fig(bound, **conditions, gpu_name="AMD Instinct MI300X")).next_step.startswith(amd_step)
    nvidia = likely_cause(fig(bound, **conditions))
    assert nvidia.next_step.startswith("`nvidia-smi") and "rocm" not in nvidia.next_step


def test_the_vendor_from_telemetry_then_the_model_then_the_name() -> None:
    assert vendor_of("NVIDIA H200", Conditions(gpu_vendor="amd")) == "amd"
    assert vendor_of("AMD Instinct MI300X", Conditions(gpu_vendor="NVIDIA")) == "nvidia"
    assert vendor_of("MI300X") == "amd" and vendor_of("H200") == "nvidia"  # a model's key
    assert vendor_of("AMD Instinct MI999") == "amd" and vendor_of("Radeon RX 9999") == "amd"  # by its words
    assert vendor_of("Some GPU") == "nvidia" and vendor_of(None) == "nvidia"
    assert vendor_of("NVIDIA H200", Conditions()) == "nvidia"


def test_heat_comes_before_a_power_fault_and_names_the_temperature() -> None:
    both = likely_cause(fig(throttle=["hardware slowdown", "software thermal slowdown"], temperature_max_c=91.4))
    assert (both.text, both.kind) == ("thermal slowdown at 91 C", "held")
    assert likely_cause(fig(throttle=["hardware thermal slowdown"])).text == "thermal slowdown"
    faults = likely_cause(fig(throttle=["idle", "hardware slowdown", "power brake"]))
    assert faults.text == "clocks held back by hardware slowdown, power brake"
    assert faults.next_step == "`nvidia-smi -q -d PERFORMANCE,POWER`; check the board's power cables and supply"


RIVALS = [{"pid": 10 + k, "name": f"r{k}"} for k in range(4)]


def test_gpu_rivals_are_the_cause_only_where_trust_blamed_them() -> None:
    blamed = likely_cause(
        fig(trust="SUSPECT", other_gpu_processes=RIVALS, trust_outside=["4 other process(es) on the GPU"])
    )
    assert blamed.kind == "outside" and blamed.text == (
        "4 other process(es) on the GPU: r0 (pid 10), r1 (pid 11), r2 (pid 12)"
    )
    assert blamed.next_step == "stop pid 10 and run again"
    holder = likely_cause(fig(other_gpu_processes=RIVALS))  # TRUSTED: they only held memory
    assert holder.kind == "nothing"
    elsewhere = likely_cause(
        fig(trust="SUSPECT", other_gpu_processes=RIVALS, trust_outside=["other processes kept 9 of 16 CPUs busy"])
    )
    assert elsewhere.text == "other processes kept 9 of 16 CPUs busy" and elsewhere.kind == "outside"
    unlabelled = likely_cause(fig(trust=None, other_gpu_processes=RIVALS))  # no trust label: rivals are blamed
    assert unlabelled.kind == "outside"


def test_several_outside_reasons_are_joined_and_the_first_next_step_is_kept() -> None:
    outside = ["a; next: stop a", "b; next: stop b"]
    found = likely_cause(fig(trust="SUSPECT", trust_outside=outside))
    assert (found.text, found.next_step) == ("a; b", "stop a")
    assert split_reason("c") == ("c", "run it again on a quiet host (`--wait-quiet 120`)")


SLOW = InForce("CUDA_LAUNCH_BLOCKING", "1", ("matmul",), "every launch waits", "unset it", True)
FAST = InForce("NVIDIA_TF32_OVERRIDE", "1", ("matmul",), "fp32 runs as TF32", "unset it", False)


@pytest.mark.parametrize(
    ("value", "names"),
    [(400.0, ["CUDA_LAUNCH_BLOCKING"]), (600.0, ["NVIDIA_TF32_OVERRIDE"]), (500.0, []), (450.0, []), (449.0,
     ["CUDA_LAUNCH_BLOCKING"]), (550.0, []), (551.0, ["NVIDIA_TF32_OVERRIDE"])],
)  # fmt: skip
def test_a_setting_is_chosen_by_the_side_of_its_expectation_the_figure_is_on(value: float, names: list[str]) -> None:
    """Issue 41: only a figure off its expectation (by more than 10%) in the setting's direction names it; at its
    expectation, or with none, no setting is the cause (every one was named there on the old code)."""
    found = likely_cause(fig(value=value), Expectation(500.0, "the H200's 500"), [SLOW, FAST])
    assert [s.split("=")[0] for s in found.text.split("; ")] == names if names else found.kind == "nothing"
    assert not names or (found.kind == "setting" and found.next_step == "unset it")
    assert likely_cause(fig(value=400.0), Expectation(500.0, "x"), [FAST]).kind == "nothing"
    assert likely_cause(fig(value=600.0), Expectation(500.0, "x"), [SLOW]).kind == "nothing"
    assert likely_cause(fig(value=1.0), None, [SLOW, FAST]).kind == "nothing"  # no expectation: none is named


def test_a_setting_cause_is_unjudgeable_unless_the_figure_passed() -> None:
    setting = Cause("x", "y", "setting")
    assert not setting.unjudgeable(Status.PASS) and setting.unjudgeable(Status.WARN)
    assert setting.unjudgeable(Status.FAIL) and not setting.judges_hardware
    # someone else's load only lowers a figure: one that still passes stands (issue 43), one below is unjudged
    assert not Cause("x", "y", "outside").unjudgeable(Status.PASS) and Cause("x", "y", "outside").unjudgeable(
        Status.WARN
    )
    assert Cause("x", "y", "broken").unjudgeable(Status.PASS)
    assert not Cause("x", "y", "clocks").unjudgeable(Status.FAIL) and Cause("x", "y", "clocks").judges_hardware


def test_the_link_below_its_top_and_at_it() -> None:
    narrow = likely_cause(
        fig("link", params={"pcie_gen": 4, "pcie_max_gen": 5, "pcie_width": 16, "pcie_max_width": 16})
    )
    assert narrow.text == "PCIe at Gen4 x16 of Gen5 x16" and narrow.kind == "link"
    narrower = likely_cause(fig("link", pcie={"gen": 5, "max_gen": 5, "width": 8, "max_width": 16}))
    assert narrower.text == "PCIe at Gen5 x8 of Gen5 x16"
    top = {"gen": 5, "max_gen": 5, "width": 16, "max_width": 16}
    full = likely_cause(
        fig("link", params={"pcie": top, "limit_basis": "PCIe Gen5 x16"}, gpu_pci_bus_id="0000:1b:00.0")
    )
    assert full.text == "the host link (PCIe Gen5 x16)"
    assert full.next_step == "`lspci -vv -s 0000:1b:00.0 | grep -i lnksta` for its generation and width"
    unread = likely_cause(fig("link", params={"pcie_gen": 4, "pcie_max_gen": 5}))  # no width: cannot say below top
    assert unread.text == "the host link" and "lspci -vv -s BUS" in unread.next_step
    by_param = likely_cause(fig("link", params={"pci_bus_id": "0000:3b:00.0"}))
    assert "lspci -vv -s 0000:3b:00.0 " in by_param.next_step


def test_the_link_reading_prefers_conditions_and_a_nested_record() -> None:
    m = Measurement("bw", "x", 1.0, "GB/s", params={"gen": 3, "pcie_width": 4}, conditions={"gen": 4})
    assert pcie_link(m) == {"gen": 4, "max_gen": None, "width": 4, "max_width": None}
    nested = Measurement("bw", "x", 1.0, "GB/s", params={"pcie": {"gen": 2}}, conditions={"pcie": {"gen": 5}})
    assert pcie_link(nested)["gen"] == 5


def test_the_fall_through_causes_in_their_order() -> None:
    reasons = ["timing spread 9% of the median", "x; next: look"]
    noisy = likely_cause(fig(trust="NOISY", trust_reasons=reasons))
    assert (noisy.text, noisy.kind) == ("timing spread 9% of the median; x", "trust")
    assert noisy.next_step == "run it again on a quiet host (`--wait-quiet 120`)"
    unseen = likely_cause(fig(samples=0))
    assert unseen.kind == "unjudged" and unseen.text == "no telemetry covers it"
    assert likely_cause(fig()).kind == "nothing"
    broken = likely_cause(fig(params={"broken": "timers disagree"}, clock_ratio=0.5))
    assert (broken.text, broken.next_step, broken.kind) == ("timers disagree", "run it again", "broken")


def test_a_known_model_named_without_its_vendor_s_words_is_still_that_vendor_s() -> None:
    """A name that is no model's key but that the reference table recognises (an OAM variant, an architecture)
    takes the model's vendor, though it holds none of the words AMD, Radeon or Instinct."""
    assert vendor_of("MI325X OAM") == "amd" and vendor_of("gfx1151") == "amd"
    assert vendor_of("NVIDIA H100 80GB HBM3") == "nvidia"


@pytest.mark.parametrize("key", ["gpu_name", "device_name"])
def test_without_telemetry_s_name_the_figure_s_own_name_picks_the_vendor_s_tool(key: str) -> None:
    m = fig(params={key: "AMD Instinct MI300X"}, clock_ratio=0.5)
    m.conditions.pop("gpu_name")
    found = likely_cause(m)
    assert (found.kind, found.next_step) == ("clocks", "`rocm-smi --showclocks --showpower --showperflevel`")


def test_gpu_rivals_blamed_in_conditions_read_back_from_the_store_are_the_cause() -> None:
    """A figure's conditions come back from the store as JSON: a reason's kind is equal words, not the module's own
    object, and the rivals it blames are still named with their first pid's next step."""
    reason = "1 other process(es) on the GPU: python3 (pid 825, 874 MiB); next: `nvidia-smi` lists them"
    stored = {
        "trust": "SUSPECT",
        "trust_reasons": [reason],
        "trust_outside": [reason],
        "trust_detail": [{"kind": "gpu-processes", "outside": True, "numbers": {}, "involved": ["825"]}],
        "other_gpu_processes": [{"pid": 825, "name": "python3", "gpu_memory": 874 * 2**20}],
    }
    found = likely_cause(fig(**json.loads(json.dumps(stored))))
    assert (found.text, found.next_step, found.kind) == (
        "1 other process(es) on the GPU: python3 (pid 825)",
        "stop pid 825 and run again",
        "outside",
    )


@pytest.mark.parametrize(
    ("link", "text"),
    [
        ({"gen": 5, "max_gen": 4, "width": 16, "max_width": 16}, "the host link"),  # read faster than its top
        ({"gen": 5, "max_gen": 5, "width": 16, "max_width": 8}, "the host link"),  # read wider than its top
        ({"gen": 4, "max_gen": 5, "width": 32, "max_width": 16}, "PCIe at Gen4 x32 of Gen5 x16"),  # slower: below
        ({"gen": 5, "max_gen": 4, "width": 8, "max_width": 16}, "PCIe at Gen5 x8 of Gen4 x16"),  # narrower: below
    ],
)
def test_a_link_read_above_its_top_is_not_below_it(link: dict, text: str) -> None:
    """An odd read (a link faster or wider than its reported top) is no reason to reseat the card: only a link
    below its top generation or width is named as one (as the gate's checks read it)."""
    found = likely_cause(fig("link", pcie=link))
    assert found.text == text
    if text != "the host link":
        assert found.next_step == f"reseat or check the riser: {text}"


def test_an_expectation_is_a_value_that_cannot_change_once_made() -> None:
    expected = Expectation(794.5, "the H200's published MAMF")
    with pytest.raises(dataclasses.FrozenInstanceError):
        expected.value = 1.0  # type: ignore[misc]
    assert len({expected, Expectation(794.5, "the H200's published MAMF")}) == 1 and expected.kind == "reference"


def test_a_low_clock_is_the_cause_of_a_compute_figure_read_back_from_the_store() -> None:
    params = json.loads('{"bound": "compute"}')  # equal words, not the module's own object
    m = Measurement("matmul", "matmul bf16 8192", 500.0, "TFLOP/s", None, 20, "cuda:0", params, {"samples": 9})
    m.conditions.update(clock_ratio=0.5, throttle=["sw power cap"])
    assert likely_cause(m).text == "SM clock at 50% of max (sw power cap)"
