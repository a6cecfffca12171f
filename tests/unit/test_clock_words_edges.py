"""What judge() says of a GPU's clocks and power, word for word, on NVIDIA and on AMD: each next step names the
vendor's own tool; a lowered limit is a note until the load reaches it; a power cap says nothing of a figure that is
not compute-bound; an unread power reading still words its reason; and a hardware slowdown is told from heat."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.events import Measurement
from rigcheck.engine.trust.clocks import _slowdown_next, power_limit_state
from rigcheck.engine.trust.conditions import judge

BUSY = {"samples": 9, "window_s": 4.0, "utilization_mean_pct": 99.0, "idle_share": 0.0}
AT_DEFAULT = {"power_mean_w": 690.0, "power_limit_w": 700.0, "power_default_limit_w": 700.0}
LOWERED = {"power_mean_w": 495.0, "power_limit_w": 500.0, "power_default_limit_w": 700.0}


def figure(bound: str = "compute") -> Measurement:
    params = {"bound": bound, "threads": 1, "spread_rel": 0.01, "timer": "wall"}
    return Measurement("matmul", "matmul bf16 8192", 690.0, "TFLOP/s", None, 20, "cuda:0", params)


def judged(bound: str = "compute", **conditions: Any):  # type: ignore[no-untyped-def]
    return judge(BUSY | conditions, figure(bound))


@pytest.mark.parametrize(
    ("conditions", "bound", "nvidia", "amd"),
    [
        ({"clock_ratio": 0.7, "throttle": []}, "compute", "nvidia-smi -q -d PERFORMANCE,CLOCK",
         "rocm-smi --showperflevel --showclocks"),
        ({"mem_clock_ratio": 0.5}, "memory", "nvidia-smi -q -d CLOCK,PERFORMANCE", "rocm-smi --showclocks"),
        ({"clock_ratio": 0.99, "throttle": ["software thermal slowdown"]}, "compute",
         "nvidia-smi -q -d PERFORMANCE,TEMPERATURE", "rocm-smi --showtemp --showperflevel"),
        ({"clock_ratio": 0.99, "throttle": ["hardware slowdown"]}, "compute", "nvidia-smi -q -d PERFORMANCE`",
         "rocm-smi --showperflevel`"),
        ({"other_gpu_processes": [{"pid": 9, "name": "x", "gpu_memory": 2**20}]}, "compute", "`nvidia-smi`",
         "`rocm-smi --showpids`"),
    ],
)  # fmt: skip
def test_each_next_step_names_the_vendor_s_own_tool(conditions: dict, bound: str, nvidia: str, amd: str) -> None:
    on_nvidia = judged(bound, **conditions, gpu_vendor="NVIDIA")
    on_amd = judged(bound, **conditions, gpu_vendor="AMD")
    assert on_nvidia.trust == on_amd.trust == "SUSPECT"
    assert nvidia in on_nvidia.reasons[0] and "rocm-smi" not in on_nvidia.reasons[0]
    assert amd in on_amd.reasons[0] and "nvidia-smi" not in on_amd.reasons[0]
    assert amd in judged(bound, **conditions, gpu_vendor="amd").reasons[0]  # as a driver may spell it


def test_a_clock_below_earlier_runs_names_the_vendor_s_tool() -> None:
    conditions = BUSY | {"clock_ratio": 0.7, "sm_clock_mean_mhz": 1000.0, "throttle": []}
    amd = judge(conditions | {"gpu_vendor": "AMD"}, figure(), reference_clocks=[1500.0, 1500.0])
    assert "next: `rocm-smi`, and `rigcheck compare`" in amd.reasons[0]
    nvidia = judge(conditions, figure(), reference_clocks=[1500.0, 1500.0])
    assert "next: `nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE`, and `rigcheck compare`" in nvidia.reasons[0]
    idle = judge(conditions | {"utilization_mean_pct": 10.0}, figure(), reference_clocks=[1500.0, 1500.0])
    assert idle.trust == "TRUSTED"  # an idle GPU's clock is no comparison


def test_heat_and_a_hardware_slowdown_have_their_own_next_steps() -> None:
    assert _slowdown_next({}, ["hardware thermal slowdown"]).startswith("`nvidia-smi -q -d PERFORMANCE,TEMPERATURE`")
    both = _slowdown_next({}, ["hardware slowdown", "software thermal slowdown"])  # heat among them: heat first
    assert both.startswith("`nvidia-smi -q -d PERFORMANCE,TEMPERATURE`; check the fans")
    hardware = _slowdown_next({}, ["hardware slowdown", "power brake"])
    assert hardware == (
        "`nvidia-smi -q -d PERFORMANCE`; a hardware slowdown or power brake comes from the board or the chassis "
        "(power supply, BMC)"
    )


def test_a_lowered_limit_is_a_note_until_the_load_reaches_it_then_the_reason() -> None:
    cool = judged(**LOWERED, clock_ratio=0.99, throttle=[])
    assert cool.trust == "TRUSTED"
    assert cool.notes == ["power limit lowered to 500 W, below this board's default 700 W"]
    capped = judged(**LOWERED, clock_ratio=0.7, throttle=["power cap"])
    assert capped.trust == "SUSPECT" and capped.notes == []  # the note became the reason, not said twice
    assert capped.reasons == [
        "SM clock at 70% of max under a power limit lowered to 500 W, below this board's default 700 W "
        "(495 of 500 W); next: `sudo nvidia-smi -pl 700` restores it"
    ]
    at_default = judged(**AT_DEFAULT, clock_ratio=0.99, throttle=[])
    assert at_default.trust == "TRUSTED" and at_default.notes == []  # the default limit is never "lowered"


@pytest.mark.parametrize("bound", ["memory", "link"])
def test_a_power_cap_says_nothing_of_a_figure_that_is_not_compute_bound(bound: str) -> None:
    result = judged(bound, **AT_DEFAULT, clock_ratio=0.3, throttle=["power cap"], mem_clock_ratio=0.99)
    assert result.trust == "TRUSTED"
    assert result.notes == [f"power-limited at 690 of 700 W, which does not slow a {bound}-bound figure"]
    unread = judged(bound, clock_ratio=0.3, throttle=["power cap"])
    assert unread.notes == [f"power-limited at its power limit, which does not slow a {bound}-bound figure"]
    no_draw = judged(bound, power_limit_w=700.0, clock_ratio=0.3, throttle=["power cap"])  # the draw unread
    assert no_draw.notes == unread.notes
    assert judged(bound, **AT_DEFAULT, clock_ratio=0.3, throttle=[]).notes == []


def test_a_compute_figure_without_a_clock_reading_is_not_judged_on_clocks() -> None:
    result = judged(**AT_DEFAULT, throttle=["power cap"])
    assert result.trust == "TRUSTED" and result.notes == [
        "power-limited at 690 of 700 W, which does not slow a compute-bound figure"
    ]


def test_an_unread_default_limit_under_the_cap_is_a_reason_with_its_next_step() -> None:
    result = judged(power_mean_w=690.0, power_limit_w=700.0, clock_ratio=0.7, throttle=["power cap"])
    assert result.trust == "SUSPECT"
    assert result.reasons == [
        "SM clock at 70% of max under the power cap (690 of 700 W), and the board's default power limit could not "
        "be read to rule out a lowered one; next: `nvidia-smi -q -d POWER`"
    ]
    assert (
        judged(clock_ratio=0.7, throttle=["power cap"])
        .reasons[0]
        .startswith("SM clock at 70% of max under the power cap (its power limit)")
    )


def test_the_low_clock_reason_names_the_throttle_reasons_but_not_idle() -> None:
    result = judged(clock_ratio=0.7, throttle=["idle", "sync boost", "applications clocks setting"])
    assert result.reasons[0].startswith("SM clock at 70% of max: sync boost, applications clocks setting; next:")


def test_the_limit_state_through_the_policy() -> None:
    assert power_limit_state(AT_DEFAULT) == "default"
    assert power_limit_state(LOWERED) == "lowered"
    assert power_limit_state({"power_limit_w": 700.0}) == "unknown"
    assert power_limit_state({"power_limit_w": 700.0, "power_max_limit_w": 700.0}) == "default"


def test_a_window_without_an_idle_share_is_judged_on_its_clock() -> None:
    """Conditions stored before the idle share was kept: a busy GPU's low clock is still a reason."""
    conditions = {k: v for k, v in BUSY.items() if k != "idle_share"} | {"clock_ratio": 0.7, "throttle": []}
    assert judge(conditions, figure()).trust == "SUSPECT"
    assert judge(conditions | {"idle_share": 0.5}, figure()).trust == "TRUSTED"
