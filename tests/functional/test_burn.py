"""Burn on the CPU for a few seconds through the real runner: a wrong element, a falling rate, a clean run, a cancel."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from quiet_cpu import quiet_cpu
from rigcheck.engine.events import Measurement, StageFinished, Status, Verdict
from rigcheck.engine.registry import STAGES, default_stages
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan
from rigcheck.engine.stages.burn.loop import BurnSettings, Interval, Started
from rigcheck.engine.stages.burn.stage import verdicts
from rigcheck.engine.stages.burn.verdicts import FALL_LIMIT, agreement, correctness, likely_cause, over_time, peers
from rigcheck.engine.store import Store

BURN = STAGES["burn"]


def burn(run_stages, seconds: float = 3.0, fault: str = ""):  # type: ignore[no-untyped-def]
    options: dict[str, object] = {"duration": seconds}
    if fault:
        options["burn_fault"] = fault
    run, events, _ = run_stages([BURN], options)
    found = {v.check: v for v in events if isinstance(v, Verdict) and v.check != "quiet-check"}
    return run, found, [e for e in events if isinstance(e, Measurement)]


def test_a_wrong_element_at_iteration_n_fails_the_run_and_names_it(run_stages) -> None:  # type: ignore[no-untyped-def]
    run, found, _ = burn(run_stages, fault="wrong@40")
    verdict = found["correctness"]
    assert verdict.status == Status.FAIL
    assert verdict.explanation.startswith("cpu returned 13 wrong element(s) at iteration 40")
    assert verdict.explanation.endswith(
        "next: test the memory (memtest86+) and check the CPU's cooling; wrong results are faulty hardware"
    )
    assert verdict.numbers["first_wrong_iteration"] == 40 and verdict.numbers["wrong_elements"] == 13
    assert run.exit_code == 1


def test_a_rate_that_falls_to_a_quarter_is_named_with_its_size(run_stages) -> None:  # type: ignore[no-untyped-def]
    run, found, measurements = burn(run_stages, seconds=4.0, fault="slow@0.5")
    verdict = found["over-time"]
    assert verdict.status == Status.WARN, verdict.explanation
    assert "cpu throughput fell" in verdict.explanation
    # the fault quarters the rate against the machine's own pace at that moment; a busy neighbour slows both
    # halves alike, so only the detector's own limit is asserted, and the text must carry the same figure
    assert verdict.numbers["change"] < -FALL_LIMIT
    assert f"fell {-verdict.numbers['change']:.0%}" in verdict.explanation
    assert "no clock telemetry" in verdict.explanation
    assert found["correctness"].status == Status.PASS
    assert len([m for m in measurements if m.params.get("interval") is not None]) >= 6
    assert run.exit_code == 0


def test_a_clean_burn_passes(run_stages, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """On a CPU kept quiet for it (tests/quiet_cpu.py), so a busy machine cannot make its rate wander: it never
    skips, and its rate must hold."""
    with quiet_cpu(tmp_path / "quiet-cpu"):
        run, found, measurements = burn(run_stages)
    assert found["correctness"].status == Status.PASS
    assert "every result bit-identical with the first" in found["correctness"].explanation
    assert found["over-time"].status == Status.PASS, found["over-time"].explanation
    assert found["peers"].status == Status.SKIP  # one device: nothing to compare with
    sustained = next(m for m in measurements if m.name.endswith("sustained"))
    assert sustained.value > 0 and sustained.unit == "GFLOP/s" and sustained.device == "cpu"
    assert run.exit_code == 0


def test_cancel_keeps_the_intervals_measured_so_far(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["burn"], "cpu", "quick", sys.executable, [])
    events: list = []
    # 30 s: intervals of 1.5 s, so three come soon and the cancel still lands long before the burn's end
    plan = RunPlan(run_id, RunRequest((BURN,), "cpu", "quick", options={"duration": 30.0}), tmp_path / "logs")
    run = Run(plan, [events.append, lambda e: store.record(run_id, e)])
    run.start()
    deadline = time.monotonic() + 60
    while sum(isinstance(e, Measurement) for e in events) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    run.cancel_stage()
    assert run.wait(30)
    kept = store.report(run_id)["measurements"]
    assert len(kept) >= 3 and all(m["name"].startswith("burn fp32") for m in kept)
    assert [e.status for e in events if isinstance(e, StageFinished)] == [Status.SKIP]


def interval(device: str, index: int, tflops: float) -> Interval:
    return Interval(device, index, 1000.0 + 10 * index, 1010.0 + 10 * index, 100, 10.0, 10.0, tflops)


def test_the_fall_names_thermal_slowdown_from_its_conditions() -> None:
    rates = [700.0] * 7 + [600.0] * 6 + [520.0] * 7  # 200 s: first minute against the last
    intervals = [interval("cuda:0", i, r) for i, r in enumerate(rates)]
    hot = {
        "sm_clock_mean_mhz": 1620.0,
        "temperature_max_c": 91,
        "power_mean_w": 540.0,
        "power_limit_w": 700.0,
        "throttle": ["software thermal slowdown"],
        "vendor": "NVIDIA",
    }
    cool = {"sm_clock_mean_mhz": 1980.0, "temperature_max_c": 55, "power_mean_w": 690.0, "throttle": []}
    verdict = over_time("cuda:0", intervals, lambda d, t0, t1: cool if t0 < 1050 else hot)
    assert verdict.status == Status.WARN
    assert verdict.explanation == (
        "cuda:0 throughput fell 26% over the burn (first minute 700, last minute 520 TFLOP/s): thermal slowdown "
        "(SM clock 1980 -> 1620 MHz, temperature 55 -> 91 C, power 540 W of 700 W); next: "
        "`nvidia-smi -q -d PERFORMANCE,TEMPERATURE`; check the fans, the airflow and the inlet temperature"
    )
    assert likely_cause(cool, cool | {"throttle": ["power cap"]}).startswith("the power cap")
    assert likely_cause(cool, cool).startswith("not the clock")


def test_a_short_burn_that_holds_passes_naming_its_window_and_one_that_falls_warns() -> None:
    steady = [interval("cuda:0", i, 700.0 - i) for i in range(4)]  # 40 s: halves of 20 s, within 1%
    verdict = over_time("cuda:0", steady, lambda d, t0, t1: {})
    assert verdict.status == Status.PASS, verdict.explanation
    assert verdict.explanation.startswith("cuda:0 throughput held over the burn (first 20 s 699.5, last 20 s 697.5")
    falling = [interval("cuda:0", i, r) for i, r in enumerate((700.0, 700.0, 620.0, 620.0))]  # 11% down
    assert over_time("cuda:0", falling, lambda d, t0, t1: {}).status == Status.WARN
    edge = [interval("cuda:0", i, r) for i, r in enumerate((700.0, 700.0, 640.0, 640.0))]  # 8.6% down: holds
    assert over_time("cuda:0", edge, lambda d, t0, t1: {}).status == Status.PASS


def test_a_last_interval_longer_than_the_window_is_the_window_alone() -> None:
    """No interval starts inside the last window (the last one ran 70 s): that one interval is the end of the burn."""
    runs = [interval("cpu", i, 700.0) for i in range(3)]
    runs.append(dataclasses.replace(interval("cpu", 3, 600.0), t_start=1030.0, t_end=1100.0))
    verdict = over_time("cpu", runs, lambda d, t0, t1: {})
    assert verdict.numbers["last_tflops"] == 600.0 and verdict.status == Status.WARN  # 14% down, not 7%


def test_several_wrong_checks_name_the_first_and_count_them_all() -> None:
    runs = [dataclasses.replace(interval("cpu", i, 1.0), checks=10) for i in range(3)]
    one = [runs[0], dataclasses.replace(runs[1], wrong=[(48, 2)]), runs[2]]
    verdict = correctness("cpu", one, 8)
    assert verdict.explanation.startswith("cpu returned 2 wrong element(s) at iteration 48 (each result compared")
    assert "checks wrong" not in verdict.explanation and verdict.numbers["first_wrong_iteration"] == 48
    two = [dataclasses.replace(runs[0], wrong=[(40, 13)]), dataclasses.replace(runs[1], wrong=[(48, 2)]), runs[2]]
    verdict = correctness("cpu", two, 8)
    assert verdict.status == Status.FAIL and verdict.numbers["first_wrong_iteration"] == 40
    assert "at iteration 40 (each result compared with the first); 2 of 30 checks wrong, 15 elements in all" in (
        verdict.explanation
    )


def test_the_power_cap_as_a_cause_tells_a_lowered_limit_from_the_default() -> None:
    cool = {"sm_clock_mean_mhz": 1980.0, "temperature_max_c": 55, "power_mean_w": 690.0, "vendor": "NVIDIA"}
    capped = {"sm_clock_mean_mhz": 1470.0, "power_mean_w": 495.0, "throttle": ["power cap"], "vendor": "NVIDIA"}
    lowered = capped | {"power_limit_w": 500.0, "power_default_limit_w": 700.0, "power_max_limit_w": 700.0}
    cause = likely_cause(cool, lowered)
    assert cause.startswith("the power cap, at a limit lowered to 500 W below the board's default 700 W")
    assert cause.endswith("next: `sudo nvidia-smi -pl 700` restores the default")
    default = lowered | {"power_limit_w": 700.0}
    assert likely_cause(cool, default).startswith("the power cap at the board's default limit")
    unknown = capped | {"power_limit_w": 700.0}
    assert likely_cause(cool, unknown).endswith("next: `nvidia-smi -q -d POWER` shows the limits")
    # every cause names the next step, the unknown one too
    assert likely_cause({}, {}).endswith("next: `rigcheck monitor` beside a rerun shows the clocks and other work")


def test_a_gpu_slower_than_its_peers_is_named_and_one_gpu_is_not_compared() -> None:
    started = {f"cuda:{i}": Started(f"cuda:{i}", "NVIDIA H200 (132 SMs)", "abc", 8192, "bfloat16") for i in range(4)}
    rates = {"cuda:0": 710.0, "cuda:1": 700.0, "cuda:2": 610.0, "cuda:3": 705.0}
    found = {v.device: v for v in peers(started, rates)}
    assert {d: v.status for d, v in found.items()} == {
        "cuda:0": Status.PASS,
        "cuda:1": Status.PASS,
        "cuda:2": Status.WARN,
        "cuda:3": Status.PASS,
    }
    assert found["cuda:2"].explanation == (
        "cuda:2 sustained 610 TFLOP/s, 14% below cuda:0 (710), the best of 4 NVIDIA H200 (132 SMs); next: "
        "`nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE` (AMD: `rocm-smi`) on both: clocks, power limit and "
        "throttle reasons tell them apart"
    )
    alone = list(peers({"cuda:0": started["cuda:0"]}, {"cuda:0": 710.0}))
    assert [v.status for v in alone] == [Status.SKIP]


def test_gpus_that_disagree_about_the_same_product_are_named() -> None:
    started = {f"cuda:{i}": Started(f"cuda:{i}", "H200", "same", 8192, "bfloat16") for i in range(3)}
    assert [v.status for v in agreement(started)] == [Status.PASS]
    started["cuda:1"] = Started("cuda:1", "H200", "other", 8192, "bfloat16")
    odd = list(agreement(started))
    assert [(v.device, v.status) for v in odd] == [("cuda:1", Status.WARN)]


def test_gpus_that_split_two_ways_are_all_named_and_none_is_singled_out() -> None:
    started = {
        f"cuda:{i}": Started(f"cuda:{i}", "H200", "same" if i < 2 else "other", 8192, "bfloat16") for i in range(4)
    }
    [verdict] = agreement(started)
    assert (verdict.device, verdict.status) == ("", Status.WARN)
    assert verdict.explanation.startswith("cuda:0, cuda:1, cuda:2, cuda:3 (H200) disagree about the same product")
    assert sorted(verdict.numbers["differing"]) in (["cuda:0", "cuda:1"], ["cuda:2", "cuda:3"])
    # three against one: the odd one out is named alone
    started["cuda:1"] = Started("cuda:1", "H200", "other", 8192, "bfloat16")
    assert [(v.device, v.status) for v in agreement(started)] == [("cuda:0", Status.WARN)]


def test_a_memory_copy_that_comes_back_wrong_fails_and_an_intact_one_passes() -> None:
    clean = [dataclasses.replace(interval("cuda:0", i, 700.0), checks=4, copy_gb_s=3000.0) for i in range(3)]
    verdict = correctness("cuda:0", clean, 8, "NVIDIA")
    assert verdict.status == Status.PASS
    assert verdict.explanation.endswith(
        "every result bit-identical with the first, and every memory copy came back intact"
    )
    clean[1] = dataclasses.replace(clean[1], copy_wrong=[(120, 3)])
    verdict = correctness("cuda:0", clean, 8, "NVIDIA")
    assert verdict.status == Status.FAIL
    assert verdict.explanation == (
        "cuda:0 memory copy came back with 3 wrong word(s) after iteration 120: its memory corrupts data; next: "
        "`nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT`; wrong results are faulty hardware"
    )
    assert (verdict.numbers["copy_wrong_checks"], verdict.numbers["copy_wrong_words"]) == (1, 3)


def test_burn_runs_by_default_only_in_the_full_profile_and_its_limit_grows_with_duration() -> None:
    assert "burn" not in default_stages("quick") and "burn" not in default_stages("standard")
    assert default_stages("full")[-1] == "burn"
    assert "health" in default_stages("quick")
    assert BURN.timeout("quick") == 240.0
    assert BURN.timeout("quick", {"duration": 3600.0}) == 3600.0 + 180.0
    assert STAGES["matmul"].timeout("quick", {"duration": 3600.0}) == 240.0


@pytest.mark.parametrize("value", ["-5", "0", "nan", "soon"])
def test_a_bad_duration_is_one_line_and_exit_2(tmp_path: Path, value: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rigcheck.tui.cli", "run", "burn", "--duration", value],
        capture_output=True,
        text=True,
        env=dict(os.environ, RIGCHECK_STORE=str(tmp_path / "s.db")),
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert "duration" in done.stderr


def test_a_device_that_errors_mid_burn_fails_and_keeps_its_intervals() -> None:
    settings = BurnSettings(60.0, 3.0, 8192, torch.bfloat16, check_every=8)
    intervals = {"cuda:0": [interval("cuda:0", i, 700.0) for i in range(5)], "cuda:1": [interval("cuda:1", 0, 690.0)]}
    started = {d: Started(d, "H200", "same", 8192, "bfloat16") for d in intervals}
    failed = {"cuda:1": "RuntimeError: CUDA error: unspecified launch failure"}
    events = list(verdicts(intervals, started, failed, {d: settings for d in intervals}, None))
    errors = [e for e in events if isinstance(e, Verdict) and e.check == "error"]
    assert [(e.device, e.status) for e in errors] == [("cuda:1", Status.FAIL)]
    assert errors[0].explanation == (
        "the burn on cuda:1 stopped with an error after 1 interval(s): "
        "RuntimeError: CUDA error: unspecified launch failure; next: the kernel log "
        "(`sudo dmesg | grep -iE 'xid|amdgpu'`) and `rigcheck run health --device cuda:1`"
    )
    sustained = [e for e in events if isinstance(e, Measurement)]
    assert [(m.device, m.value) for m in sustained] == [("cuda:0", 700.0), ("cuda:1", 690.0)]
