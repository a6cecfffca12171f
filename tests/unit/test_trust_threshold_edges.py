"""Each threshold of the trust policy, just inside and just outside, through judge(): the SM clock against its
maximum (85%), at the power cap (90%, and the 50% floor), against this GPU's earlier clean runs (90%), the memory
clock (90%), the timing spread (5%), the telemetry samples (3), the GPU busy share (50%) and the idle share (half);
and the CPU rule's floor, steadiness and saturation slack, on both sides."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from rigcheck.engine.events import Measurement
from rigcheck.engine.trust.conditions import judge
from rigcheck.engine.trust.policy import DEFAULT_POLICY, TrustPolicy

BUSY = {"samples": 9, "window_s": 4.0, "utilization_mean_pct": 99.0, "idle_share": 0.0, "throttle": []}
AT_DEFAULT = {"power_mean_w": 690.0, "power_limit_w": 700.0, "power_default_limit_w": 700.0}


def gpu_figure(bound: str = "compute", timer: str = "wall", **params: Any) -> Measurement:
    p = {"bound": bound, "threads": 1, "spread_rel": 0.01, "timer": timer} | params
    return Measurement("matmul", "matmul bf16 8192", 690.0, "TFLOP/s", None, 20, "cuda:0", p)


def trust(conditions: dict[str, Any], figure: Measurement | None = None, **kw: Any) -> str:
    return judge(BUSY | conditions, figure or gpu_figure(), **kw).trust


@pytest.mark.parametrize(("ratio", "label"), [(0.86, "TRUSTED"), (0.85, "TRUSTED"), (0.84, "SUSPECT")])
def test_the_sm_clock_against_its_maximum(ratio: float, label: str) -> None:
    judged = judge(BUSY | {"clock_ratio": ratio}, gpu_figure())
    assert judged.trust == label
    if label == "SUSPECT":
        assert judged.reasons[0].startswith("SM clock at 84% of max: no reason reported; next: `nvidia-smi -q -d")


@pytest.mark.parametrize(
    ("utilization", "idle_share", "label"),
    [
        (51.0, 0.0, "SUSPECT"),
        (50.0, 0.0, "SUSPECT"),
        (49.0, 0.0, "TRUSTED"),
        (99.0, 0.49, "SUSPECT"),
        (99.0, 0.5, "TRUSTED"),
    ],
)
def test_a_low_clock_counts_only_on_a_busy_gpu(utilization: float, idle_share: float, label: str) -> None:
    conditions = {"clock_ratio": 0.7, "utilization_mean_pct": utilization, "idle_share": idle_share}
    assert trust(conditions) == label
    if idle_share < 0.5:  # a device-timed figure is busy by construction, whatever NVML's lagging share says
        assert trust(conditions, gpu_figure(timer="events")) == "SUSPECT"


@pytest.mark.parametrize(
    ("ratio", "words"),
    [
        (0.91, "with the SM clock at 91% of max: normal for this load"),
        (0.90, "with the SM clock at 90% of max: normal for this load"),
        (0.89, "power-limited at 700 W, as this load is on this board (SM clock at 89% of max"),
        (0.51, "power-limited at 700 W, as this load is on this board (SM clock at 51% of max"),
        (0.50, "power-limited at 700 W, as this load is on this board (SM clock at 50% of max"),
    ],
)
def test_at_the_power_cap_and_the_default_limit_a_held_clock_is_a_note(ratio: float, words: str) -> None:
    judged = judge(BUSY | AT_DEFAULT | {"clock_ratio": ratio, "throttle": ["power cap"]}, gpu_figure())
    assert judged.trust == "TRUSTED" and any(words in note for note in judged.notes), judged.notes


def test_at_the_power_cap_a_clock_under_half_is_not_the_load_s_doing() -> None:
    judged = judge(BUSY | AT_DEFAULT | {"clock_ratio": 0.49, "throttle": ["power cap"]}, gpu_figure())
    assert judged.trust == "SUSPECT"
    assert judged.reasons[0].startswith("SM clock at 49% of max under the power cap at the board's default limit")
    idle = judge(BUSY | AT_DEFAULT | {"clock_ratio": 0.49, "throttle": ["power cap"], "utilization_mean_pct": 10.0},
                 gpu_figure())  # fmt: skip
    assert idle.trust == "TRUSTED"  # not busy: the clock says nothing of the board


@pytest.mark.parametrize(("limit", "label"), [(693.5, "TRUSTED"), (692.5, "SUSPECT")])
def test_a_limit_within_one_percent_of_the_default_is_the_default(limit: float, label: str) -> None:
    conditions = AT_DEFAULT | {"power_limit_w": limit, "clock_ratio": 0.7, "throttle": ["power cap"]}
    judged = judge(BUSY | conditions, gpu_figure())
    assert judged.trust == label
    if label == "SUSPECT":
        assert "under a power limit lowered to 692 W" in judged.reasons[0]


@pytest.mark.parametrize(("mean", "label"), [(1340.0, "TRUSTED"), (1323.0, "TRUSTED"), (1320.0, "SUSPECT")])
def test_the_clock_against_this_gpu_s_earlier_clean_runs(mean: float, label: str) -> None:
    """90% of the median of 1,460, 1,470 and 1,500 MHz is 1,323."""
    conditions = AT_DEFAULT | {"clock_ratio": 0.74, "sm_clock_mean_mhz": mean, "throttle": ["power cap"]}
    judged = judge(BUSY | conditions, gpu_figure(), reference_clocks=[1500.0, 1460.0, 1470.0])
    assert judged.trust == label
    if label == "SUSPECT":
        assert "below the 1,470 MHz this GPU held for the same figure in 3 earlier clean run(s)" in judged.reasons[0]


@pytest.mark.parametrize(("ratio", "label"), [(0.91, "TRUSTED"), (0.90, "TRUSTED"), (0.89, "SUSPECT")])
def test_the_memory_clock_of_a_memory_bound_figure(ratio: float, label: str) -> None:
    judged = judge(BUSY | {"mem_clock_ratio": ratio, "clock_ratio": 0.5}, gpu_figure("memory"))
    assert judged.trust == label
    if label == "SUSPECT":
        assert judged.reasons == ["memory clock at 89% of max; next: `nvidia-smi -q -d CLOCK,PERFORMANCE`"]
    assert trust({"mem_clock_ratio": 0.5}, gpu_figure("link")) == "TRUSTED"  # only a memory-bound figure's


@pytest.mark.parametrize(("spread", "label"), [(0.049, "TRUSTED"), (0.05, "TRUSTED"), (0.051, "NOISY")])
def test_the_timing_spread(spread: float, label: str) -> None:
    assert trust({"clock_ratio": 0.99}, gpu_figure(spread_rel=spread)) == label
    # without its own share, the spread is the figure's spread over its value
    m = dataclasses.replace(gpu_figure(), spread=spread * 690.0, params={"bound": "compute", "timer": "wall"})
    assert trust({"clock_ratio": 0.99}, m) == label


@pytest.mark.parametrize(("samples", "label"), [(2, "UNJUDGED"), (3, "TRUSTED"), (4, "TRUSTED")])
def test_the_telemetry_samples(samples: int, label: str) -> None:
    judged = judge(BUSY | {"samples": samples, "window_s": 0.25, "clock_ratio": 0.99}, gpu_figure())
    assert judged.trust == label
    if label == "UNJUDGED":
        assert judged.reasons == ["too short to judge: 2 telemetry samples in 0.25 s"]


# -- the CPU rule, straight from the policy --


def test_the_floor_is_the_largest_of_a_share_of_threads_a_share_of_the_set_and_the_background() -> None:
    p = TrustPolicy()
    assert p.floor(8, 4) == pytest.approx(0.2)  # 5% of the threads the set can run at once, not of all 8
    assert p.floor(4, 8) == pytest.approx(0.25)  # half a CPU scaled to an 8-CPU set
    assert p.floor(40, 32) == pytest.approx(1.6)
    assert p.floor(1, 32) == pytest.approx(0.5)  # the set's share stops at the whole half CPU
    assert p.floor(1, 1) == pytest.approx(0.1)  # a quiet CPU's own background


@pytest.mark.parametrize(
    ("others", "threads", "cpus", "steady", "quota", "expected"),
    [
        (0.26, 4, 8, False, False, False),  # at the floor (0.25) but 4.26 threads' worth leave CPUs free
        (3.6, 4, 8, False, False, True),  # 7.6 of 8: past 8 less the half-CPU slack
        (3.4, 4, 8, False, False, False),  # 7.4 of 8: within the slack
        (3.5, 4, 8, False, False, False),  # 7.5 of 8: exactly the slack leaves half a CPU free
        (0.4, 8, 8, False, False, True),  # exactly the floor (5% of 8 threads) counts
        (3.6, 4, 8, False, True, False),  # under a quota no core is shared: no slack, 7.6 of 8 leaves room
        (4.1, 4, 8, False, True, True),
        (0.39, 7.9, 8, False, False, False),  # under the floor (5% of 7.9 threads), though the set is full
        (0.40, 7.9, 8, False, False, True),
        (0.41, 16, 16, True, False, True),  # a steady burner at 0.4 of a CPU counts under the floor (0.8)
        (0.4, 16, 16, True, False, True),  # exactly 0.4 counts
        (0.39, 16, 16, True, False, False),
        (0.41, 16, 16, False, False, False),  # the same load, not steady: under the floor
    ],
)
def test_interference_on_both_sides_of_each_edge(
    others: float, threads: float, cpus: float, steady: bool, quota: bool, expected: bool
) -> None:
    assert DEFAULT_POLICY.interferes(others, threads, cpus, steady, quota) is expected


def test_contended_asks_for_every_cpu_and_keeps_the_slack() -> None:
    assert DEFAULT_POLICY.contended(0.81, 16) and not DEFAULT_POLICY.contended(0.79, 16)
    assert DEFAULT_POLICY.contended(0.41, 16, steady=True) and not DEFAULT_POLICY.contended(0.39, 16, steady=True)
    assert not DEFAULT_POLICY.contended(0.79, 16, steady=False)


def test_the_policy_is_frozen_and_hashable() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_POLICY.spread_max = 1.0  # type: ignore[misc]
    assert hash(TrustPolicy()) == hash(DEFAULT_POLICY)
