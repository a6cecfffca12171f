"""engine/stages/burn/verdicts.py without a burn: two GPUs of one model (an H200x2 box) compared and checked for
agreement, windows whose first or last interval is longer than the window itself, each threshold from both sides
(10% below the best peer, a 10% fall, a clock 3% down), and each cause's next step for each vendor."""

from __future__ import annotations

import dataclasses

from rigcheck.engine.events import Status
from rigcheck.engine.stages.burn.loop import Interval, Started
from rigcheck.engine.stages.burn.verdicts import (
    FALL_LIMIT,
    PEER_LIMIT,
    WINDOW_S,
    agreement,
    correctness,
    error_next,
    faulty_next,
    likely_cause,
    over_time,
    peers,
    smi,
    windows,
)

H200 = "NVIDIA H200 (132 SMs)"


def interval(index: int, tflops: float, seconds: float = 10.0, device: str = "cuda:0") -> Interval:
    start = 1000.0 + seconds * index
    return Interval(device, index, start, start + seconds, 100, seconds, seconds, tflops)


def two_h200(digest0: str = "same", digest1: str = "same") -> dict[str, Started]:
    return {
        "cuda:0": Started("cuda:0", H200, digest0, 8192, "bfloat16"),
        "cuda:1": Started("cuda:1", H200, digest1, 8192, "bfloat16"),
    }


def test_the_limits_as_documented() -> None:
    assert (FALL_LIMIT, PEER_LIMIT, WINDOW_S) == (0.10, 0.10, 60.0)


def test_two_gpus_of_one_model_are_peers_on_both_sides_of_ten_percent() -> None:
    started = two_h200()
    edge = {v.device: v for v in peers(started, {"cuda:0": 700.0, "cuda:1": 630.0})}  # exactly 90%: holds
    assert {d: v.status for d, v in edge.items()} == {"cuda:0": Status.PASS, "cuda:1": Status.PASS}
    assert edge["cuda:1"].explanation == "cuda:1 sustained 630 TFLOP/s, 90% of the best of 2 NVIDIA H200 (132 SMs)"
    assert edge["cuda:1"].numbers == {"value": 630.0, "best": 700.0, "best_device": "cuda:0", "share": 0.9}
    assert edge["cuda:1"].tolerance == PEER_LIMIT
    slow = {v.device: v for v in peers(started, {"cuda:0": 629.9, "cuda:1": 700.0}, vendor="NVIDIA")}
    assert slow["cuda:1"].status == Status.PASS and slow["cuda:0"].status == Status.WARN
    assert slow["cuda:0"].explanation == (
        "cuda:0 sustained 629.9 TFLOP/s, 10% below cuda:1 (700), the best of 2 NVIDIA H200 (132 SMs); next: "
        "`nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE` on both: clocks, power limit and throttle reasons tell "
        "them apart"
    )
    assert slow["cuda:0"].numbers["best_device"] == "cuda:1" and slow["cuda:0"].tolerance == PEER_LIMIT
    amd = {v.device: v for v in peers(started, {"cuda:0": 500.0, "cuda:1": 700.0}, vendor="AMD")}
    assert "next: `rocm-smi` on both" in amd["cuda:0"].explanation


def test_peers_are_gpus_doing_the_same_work_with_a_figure() -> None:
    started = two_h200() | {"cuda:2": Started("cuda:2", H200, "same", 4096, "bfloat16")}  # another size
    found = list(peers(started, {"cuda:0": 700.0, "cuda:1": 400.0, "cuda:2": 100.0}))
    assert [(v.device, v.status) for v in found] == [
        ("cuda:0", Status.PASS),
        ("cuda:1", Status.WARN),
        ("cuda:2", Status.SKIP),
    ]
    assert found[2].explanation == "cuda:2: no other NVIDIA H200 (132 SMs) in this burn to compare with"
    assert found[2].numbers == {"value": 100.0}
    # a GPU that stopped before a sustained figure is no peer: the other is then alone
    alone = list(peers(two_h200(), {"cuda:1": 700.0}))
    assert [(v.device, v.status) for v in alone] == [("cuda:1", Status.SKIP)]


def test_two_gpus_of_one_model_agree_bit_for_bit_or_are_both_named() -> None:
    [same] = agreement(two_h200())
    assert same.status == Status.PASS and same.device == ""
    assert same.explanation == "the first results of cuda:0, cuda:1 (NVIDIA H200 (132 SMs)) are bit-identical"
    assert same.numbers == {"devices": ["cuda:0", "cuda:1"], "differing": []}
    [split] = agreement(two_h200("a", "b"))  # one against one: neither can be the odd one out
    assert split.status == Status.WARN and split.device == ""
    assert split.explanation == (
        "cuda:0, cuda:1 (NVIDIA H200 (132 SMs)) disagree about the same product: at least one computes wrong; "
        "next: `rigcheck run verify` on each"
    )
    assert split.numbers["differing"] == ["cuda:1"]
    alone = {"cuda:0": Started("cuda:0", H200, "a", 8192, "bfloat16")}
    assert list(agreement(alone)) == []
    three = two_h200() | {"cuda:2": Started("cuda:2", H200, "odd", 8192, "bfloat16")}
    [odd] = agreement(three)
    assert (odd.device, odd.status) == ("cuda:2", Status.WARN)
    assert odd.explanation == (
        "cuda:2's first result differs from 2 of its 2 peers (NVIDIA H200 (132 SMs)) on the same product; next: "
        "`rigcheck run verify --device cuda:2`"
    )
    # another model in the same box is its own group
    mixed = two_h200() | {"cuda:2": Started("cuda:2", "NVIDIA A100", "other", 8192, "bfloat16")}
    assert [v.status for v in agreement(mixed)] == [Status.PASS]


def test_a_first_interval_longer_than_the_window_is_the_first_window_alone() -> None:
    runs = [interval(0, 700.0, seconds=70.0)] + [interval(i, 600.0) for i in range(1, 30)]
    runs = [runs[0]] + [dataclasses.replace(r, t_start=r.t_start + 60.0, t_end=r.t_end + 60.0) for r in runs[1:]]
    first, last, span = windows(runs) or ([], [], 0.0)
    assert first == runs[:1] and span == WINDOW_S
    assert last == [r for r in runs if r.t_start >= runs[-1].t_end - WINDOW_S]
    verdict = over_time("cuda:0", runs, lambda d, t0, t1: {})
    assert verdict.numbers["first_tflops"] == 700.0 and verdict.numbers["last_tflops"] == 600.0
    assert verdict.status == Status.WARN


def test_windows_need_four_intervals_and_halve_a_short_burn() -> None:
    assert windows([interval(i, 700.0) for i in range(3)]) is None
    verdict = over_time("cpu", [interval(i, 700.0) for i in range(3)], lambda d, t0, t1: {})
    assert verdict.status == Status.SKIP and verdict.numbers == {"intervals": 3}
    assert verdict.explanation == (
        "cpu: too few intervals (3) to compare the start of the burn with its end; next: a longer `--duration`"
    )
    first, last, span = windows([interval(i, 700.0) for i in range(4)]) or ([], [], 0.0)
    assert span == 20.0 and [i.index for i in first] == [0, 1] and [i.index for i in last] == [2, 3]
    long = [interval(i, 700.0) for i in range(20)]  # 200 s: a minute each end
    first, last, span = windows(long) or ([], [], 0.0)
    assert span == 60.0 and [i.index for i in first] == [0, 1, 2, 3, 4, 5] and len(last) == 6
    exact = [interval(i, 700.0) for i in range(12)]  # 120 s: halves of exactly a minute
    verdict = over_time("cpu", exact, lambda d, t0, t1: {"t0": t0, "t1": t1})
    assert "first minute 700,000, last minute 700,000 GFLOP/s, +0%" in verdict.explanation
    assert verdict.numbers["window_s"] == 60.0
    assert verdict.numbers["first_conditions"] == {"t0": 1000.0, "t1": 1060.0}
    assert verdict.numbers["last_conditions"] == {"t0": 1060.0, "t1": 1120.0}


def test_a_fall_of_exactly_ten_percent_holds_and_past_it_warns() -> None:
    held = [interval(i, r) for i, r in enumerate((700.0, 700.0, 630.0, 630.0))]
    verdict = over_time("cpu", held, lambda d, t0, t1: {})
    assert verdict.status == Status.PASS and verdict.numbers["change"] == -0.1 and verdict.tolerance == FALL_LIMIT
    held_words = "cpu throughput held over the burn (first 20 s 700,000, last 20 s 630,000 GFLOP/s, -10%)"
    assert verdict.explanation == held_words
    fell = [interval(i, r) for i, r in enumerate((700.0, 700.0, 629.0, 629.0))]
    verdict = over_time("cpu", fell, lambda d, t0, t1: {})
    assert verdict.status == Status.WARN and verdict.tolerance == FALL_LIMIT
    assert verdict.explanation.startswith("cpu throughput fell 10% over the burn (first 20 s 700,000, last 20 s 629,")
    zero = [interval(i, 0.0) for i in range(4)]  # a rate of nothing at the start: no change to compute
    assert over_time("cpu", zero, lambda d, t0, t1: {}).numbers["change"] == 0.0


def test_each_cause_of_a_fall_and_its_next_step_by_vendor() -> None:
    cool = {"sm_clock_mean_mhz": 1980.0, "temperature_max_c": 55, "vendor": "NVIDIA"}
    hot_hw = cool | {"throttle": ["hardware thermal slowdown"], "vendor": "AMD"}
    assert likely_cause(cool, hot_hw).startswith("thermal slowdown (SM clock 1980 -> 1980 MHz, temperature 55 -> 55 C)")
    assert "next: `rocm-smi --showtemp --showperflevel`; check the fans" in likely_cause(cool, hot_hw)
    brake = likely_cause(cool, cool | {"throttle": ["power brake"]})
    assert brake.startswith("a hardware slowdown signal (power brake) (")
    assert brake.endswith(
        "next: `nvidia-smi -q -d PERFORMANCE`; it comes from the board or the chassis (power supply, BMC)"
    )
    slowdown = likely_cause(cool, cool | {"throttle": ["hardware slowdown"]})
    assert slowdown.startswith("a hardware slowdown signal (SM clock")
    # a clock 3% down is the edge: just below it falls with no reason, at it the clock held
    falling = likely_cause(cool, cool | {"sm_clock_mean_mhz": 1980.0 * 0.97 - 0.1})
    assert falling.startswith("a falling clock with no reason reported (SM clock 1980 -> 1920 MHz")
    assert falling.endswith("next: `nvidia-smi -q -d PERFORMANCE,CLOCK`")
    held = likely_cause(cool, cool | {"sm_clock_mean_mhz": 1980.0 * 0.97})
    assert held.startswith("not the clock, which held: look for other work on the device or the host (")
    assert held.endswith("next: `nvidia-smi` for the device, `top` for the host")
    unknown = {"sm_clock_mean_mhz": 1900.0}
    assert likely_cause(unknown, unknown).endswith(
        "next: `nvidia-smi` (AMD: `rocm-smi --showpids`) for the device, `top` for the host"
    )
    # what was seen, each only where read: no temperature on one side, power without its limit
    seen = likely_cause(
        {"sm_clock_mean_mhz": 1900.0}, {"sm_clock_mean_mhz": 1900.0, "temperature_max_c": 80, "power_mean_w": 350.4}
    )
    assert seen.startswith(
        "not the clock, which held: look for other work on the device or the host "
        "(SM clock 1900 -> 1900 MHz, power 350 W)"
    )
    bare = likely_cause({"x": 1}, {"x": 1})
    assert bare.startswith("not the clock, which held: look for other work on the device or the host; next:")
    assert likely_cause({}, cool).startswith("no clock telemetry") and likely_cause(cool, {}).startswith("no clock")


def test_the_power_cap_cause_at_the_default_lowered_and_unknown_limit() -> None:
    capped = {"sm_clock_mean_mhz": 1470.0, "throttle": ["power cap"]}
    first = {"sm_clock_mean_mhz": 1980.0}
    default = likely_cause(first, capped | {"power_limit_w": 700.0, "power_default_limit_w": 700.0})
    assert default.startswith("the power cap at the board's default limit: a hotter board holds a lower clock")
    assert default.endswith("next: `nvidia-smi -q -d POWER,TEMPERATURE`; check the cooling")
    near = likely_cause(first, capped | {"power_limit_w": 694.0, "power_default_limit_w": 700.0})  # 99%: default
    assert near.startswith("the power cap at the board's default limit")
    lowered = likely_cause(first, capped | {"power_limit_w": 450.0, "power_default_limit_w": 700.0})
    assert lowered.startswith("the power cap, at a limit lowered to 450 W below the board's default 700 W")
    assert "power 450 W" not in lowered and "of 450 W" not in lowered  # no power reading was given
    unknown = likely_cause(first, capped | {"power_limit_w": 450.0})
    assert unknown.startswith("the power cap (the board's default limit is unknown)")


def test_next_steps_for_wrong_results_and_errors_on_each_kind_of_device() -> None:
    assert smi("cpu", "NVIDIA", "n", "a") == ""
    assert smi("cuda:0", "AMD", "n", "a") == "`a`" and smi("cuda:0", "NVIDIA", "n", "a") == "`n`"
    assert smi("cuda:0", None, "n", "a") == "`n` (AMD: `a`)"
    assert faulty_next("cuda:1", "NVIDIA") == (
        "next: `nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT` and `rigcheck run verify --device cuda:1`; "
        "wrong results are faulty hardware"
    )
    assert faulty_next("cuda:1", "AMD", memory=True) == (
        "next: `rocm-smi --showrasinfo all`; wrong results are faulty hardware"
    )
    assert faulty_next("cpu", None).startswith("next: test the memory (memtest86+)")
    assert error_next("cuda:0") == (
        "next: the kernel log (`sudo dmesg | grep -iE 'xid|amdgpu'`) and `rigcheck run health --device cuda:0`"
    )
    assert error_next("cpu") == "next: the stage's log (`rigcheck show last`) and the kernel log (`sudo dmesg`)"


def test_correctness_counts_checks_and_says_when_none_ran() -> None:
    none = correctness("cuda:0", [interval(i, 700.0) for i in range(2)], 8)
    assert none.status == Status.SKIP and none.explanation == "cuda:0 was stopped before its first check"
    runs = [dataclasses.replace(interval(i, 700.0), checks=3, iterations=50) for i in range(2)]
    clean = correctness("cuda:0", runs, 8)
    assert clean.status == Status.PASS
    assert clean.explanation == "cuda:0: 6 checks over 100 iterations, every result bit-identical with the first"
    assert clean.numbers == {
        "checks": 6,
        "iterations": 100,
        "check_every": 8,
        "wrong_checks": 0,
        "wrong_elements": 0,
        "first_wrong_iteration": None,
        "copy_wrong_checks": 0,
        "copy_wrong_words": 0,
    }
    # wrong elements come before a wrong copy in the verdict
    both = [dataclasses.replace(runs[0], wrong=[(7, 1)], copy_wrong=[(5, 2)]), runs[1]]
    assert correctness("cuda:0", both, 8).explanation.startswith("cuda:0 returned 1 wrong element(s) at iteration 7")


def test_digests_are_compared_by_value_as_they_arrive_from_separate_children() -> None:
    """Each GPU's digest comes over its own pipe: equal strings, never one object."""
    digests = ["".join(["ab", "cd"]) for _ in range(3)]
    assert digests[0] == digests[1] and digests[0] is not digests[1]
    started = {f"cuda:{i}": Started(f"cuda:{i}", H200, digests[i], 8192, "bfloat16") for i in range(3)}
    [verdict] = agreement(started)
    assert verdict.status == Status.PASS and verdict.numbers["differing"] == []


def test_the_window_rates_are_kept_to_four_decimals() -> None:
    runs = [interval(i, r) for i, r in enumerate((700.123456, 700.123456, 629.987654, 629.987654))]
    numbers = over_time("cpu", runs, lambda d, t0, t1: {}).numbers
    assert (numbers["first_tflops"], numbers["last_tflops"]) == (700.1235, 629.9877)
    assert numbers["change"] == round(629.987654 / 700.123456 - 1, 4) and numbers["window_s"] == 20.0
