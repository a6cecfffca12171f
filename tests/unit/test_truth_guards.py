"""Each numerical-truth guard fires on the fault it exists to catch, beside a clean case that passes."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import time
from typing import Any

import pytest
from rigcheck.engine.events import Fingerprint, Measurement, Status, Verdict
from rigcheck.engine.facts.fingerprint import blas_identity, digest
from rigcheck.engine.measure.plausibility import Limit, cpu_matmul_limit, over_limit, pcie_limit
from rigcheck.engine.measure.stats import TimingStats, clocks_disagree
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan
from rigcheck.engine.stages.common.figures import checked
from rigcheck.engine.telemetry.sample import GpuSample, HostSample, ProcessUse, Sample
from rigcheck.engine.trust.conditions import ConditionsAnnotator, gpu_index_for, judge, summarise

BUS = ("0000:1b:00.0", "0000:2c:00.0")


def gpu(index: int, clock: float = 1980.0, reasons: tuple[str, ...] = (), **extra: Any) -> GpuSample:
    fields: dict[str, Any] = {
        "sm_clock_mhz": clock,
        "max_sm_clock_mhz": 1980.0,
        "mem_clock_mhz": 3201.0,
        "max_mem_clock_mhz": 3201.0,
        "power_w": 690.0,
        "power_limit_w": 700.0,
        "utilization_pct": 100.0,
        "throttle": reasons,
        "pci_bus_id": f"00000000:{BUS[index][5:].upper()}",
    } | extra
    return GpuSample(index, "NVIDIA H200", "NVIDIA", "nvml", **fields)


def window(
    others: float = 0.0, cpus: int = 16, gpus: tuple[GpuSample, ...] = (), top: tuple[ProcessUse, ...] = (), n: int = 6
) -> list[Sample]:
    host = HostSample(cpus, 1.0, busy_cpus=others + 1.0, own_cpus=1.0, own_pids=(10,), top_others=top)
    return [Sample(1000.0 + i * 0.1, host, gpus) for i in range(n)]


def figure(device: str = "cuda:0", value: float = 700.0, **params: Any) -> Measurement:
    base = {"bound": "compute", "threads": 1, "spread_rel": 0.01, "pci_bus_id": BUS[0]}
    return Measurement("matmul", "matmul bf16 4096", value, "TFLOP/s", 7.0, 20, device, base | params)


# -- the environment fingerprint --


def test_fingerprint_ignores_the_order_threadpoolctl_lists_libraries_in() -> None:
    libraries = [
        {"internal_api": "openblas", "version": "0.3.34", "architecture": "Haswell"},
        {"internal_api": "openmp", "version": None, "architecture": None},
        {"internal_api": "openblas", "version": "0.3.34", "architecture": "Haswell"},
    ]
    digests = set()
    for _ in range(6):
        random.shuffle(libraries)
        digests.add(digest({"torch": "2.13.0", "blas": blas_identity(libraries)}))
    assert len(digests) == 1
    changed = [*libraries[:2], {"internal_api": "openblas", "version": "0.3.35", "architecture": "Haswell"}]
    assert digest({"torch": "2.13.0", "blas": blas_identity(changed)}) not in digests


FINGERPRINT_IN_A_NEW_PROCESS = """
import sys
if sys.argv[1] == "numpy-first":
    import numpy  # loads its BLAS before torch's: threadpoolctl lists them in another order
import torch
from rigcheck.engine.facts.fingerprint import digest, fingerprint_basis
print(digest(fingerprint_basis(torch, None)))
"""


def test_the_fingerprint_of_this_environment_repeats_across_processes_and_library_orders(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import torch
    from rigcheck.engine.facts import fingerprint
    from rigcheck.engine.facts.fingerprint import fingerprint_basis

    here = digest(fingerprint_basis(torch, None))
    for order, seed in (("torch-first", "1"), ("numpy-first", "2")):
        done = subprocess.run(
            [sys.executable, "-c", FINGERPRINT_IN_A_NEW_PROCESS, order],
            capture_output=True,
            text=True,
            timeout=180,
            env=dict(os.environ, PYTHONHASHSEED=seed),
            check=False,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.strip() == here, f"another process ({order}) fingerprints this environment differently"
    libraries = fingerprint.loaded_blas()
    for _ in range(4):
        shuffled = random.sample(libraries, len(libraries)) + libraries[:1]  # in any order, one listed twice
        monkeypatch.setattr(fingerprint, "loaded_blas", lambda shuffled=shuffled: shuffled)
        assert digest(fingerprint_basis(torch, None)) == here
    other = [*libraries, {"internal_api": "openblas", "version": "0.0.1", "architecture": "Prescott"}]
    monkeypatch.setattr(fingerprint, "loaded_blas", lambda: other)
    assert digest(fingerprint_basis(torch, None)) != here  # another library loaded is another environment


def test_a_stage_whose_environment_changed_is_a_finding(tmp_path) -> None:  # type: ignore[no-untyped-def]
    heard: list[Any] = []
    run = Run(RunPlan(1, RunRequest(()), tmp_path), [heard.append])
    run._emit(Fingerprint("probe", "aaaa", {"torch": "2.13.0", "numpy": "2.1"}))
    run._emit(Fingerprint("verify", "aaaa", {"torch": "2.13.0", "numpy": "2.1"}))  # same: not repeated
    assert [type(e).__name__ for e in heard] == ["Fingerprint"]
    run._emit(Fingerprint("matmul", "bbbb", {"torch": "2.13.0", "numpy": "2.2"}))
    finding = heard[-1]
    assert isinstance(finding, Verdict) and finding.status == Status.WARN and finding.stage == "matmul"
    assert "numpy: '2.1' -> '2.2'" in finding.explanation
    assert run.fingerprint is not None and run.fingerprint.digest == "aaaa"


# -- two clocks on every timer --


def test_events_on_the_wrong_device_are_caught_by_the_wall_clock() -> None:
    # the cuda:1 bug: events recorded on cuda:0's idle stream read 1/100 of the real time
    stats = TimingStats(tuple([3.1e-5] * 20), tuple([3.1e-3] * 20))
    reason = stats.disagreement()
    assert reason is not None and "device timer disagrees with the wall clock" in reason
    assert "events 0.031 ms, wall clock 3.1 ms" in reason
    events = list(checked(figure("cuda:1", 6554.0), stats, None))
    assert events[0].params["broken"] == f"{reason}: the timer is broken"
    assert isinstance(events[1], Verdict) and events[1].status == Status.FAIL and "cuda:1" in events[1].explanation
    assert "; next: run the stage again alone on this GPU" in events[1].explanation
    assert judge({"samples": 5}, events[0]).trust == "BROKEN"


def test_events_that_fit_inside_the_wall_clock_agree() -> None:
    assert TimingStats(tuple([2.0e-3] * 20), tuple([2.15e-3] * 20)).disagreement() is None
    # launch-bound: the wall clock adds a few tens of microseconds to a short group
    assert TimingStats(tuple([5e-5] * 20), tuple([9e-5] * 20)).disagreement() is None


def test_an_event_time_longer_than_the_wall_around_it_is_impossible() -> None:
    reason = TimingStats(tuple([5e-3] * 10), tuple([2e-3] * 10)).disagreement()
    assert reason is not None and "longer than the wall clock" in reason


def test_two_host_clocks_must_agree() -> None:
    assert clocks_disagree(0.5, 0.5004, "perf_counter", "CLOCK_MONOTONIC_RAW") is None
    reason = clocks_disagree(0.5, 0.9, "perf_counter", "CLOCK_MONOTONIC_RAW")
    assert reason is not None and reason.startswith("two host clocks disagree")


def test_a_real_cpu_timing_has_agreeing_clocks() -> None:
    import torch
    from rigcheck.engine.stages.common.timing import time_calls

    a = torch.randn(128, 128)
    stats = time_calls(lambda: a @ a, torch.device("cpu"), min_reps=5, min_seconds=0.05)
    assert len(stats.check_times) == len(stats.times) and stats.disagreement() is None


# -- physical limits --


def test_a_figure_above_its_peak_is_impossible_never_a_result() -> None:
    peak = Limit(66.9, "datasheet dense fp32 peak")
    events = list(checked(figure(value=6554.0), TimingStats((1e-3,) * 5, (1.1e-3,) * 5), peak))
    assert events[0].params["broken"].startswith("impossible: 6,554 TFLOP/s is 98x the limit of 66.9")
    # its two clocks agree: not a broken timer, but work other than the count it was divided by
    assert "the timer is broken" not in events[0].params["broken"]
    assert events[0].params["broken"].endswith("the FLOP or byte count does not match the work done")
    assert isinstance(events[1], Verdict) and events[1].status == Status.FAIL
    assert judge({"samples": 10}, events[0]).trust == "BROKEN"


def test_a_figure_under_its_peak_passes_and_a_missing_limit_is_said() -> None:
    events = list(checked(figure(value=51.2), TimingStats((1e-3,) * 5, (1.1e-3,) * 5), Limit(66.9, "peak")))
    assert len(events) == 1 and events[0].params["broken"] is None
    (bare,) = checked(figure(value=51.2), None, None)
    assert bare.params["limit"] is None and bare.params["limit_basis"] == "no limit known for this device"
    assert over_limit(72.0, "TFLOP/s", 66.9, "peak") is None  # inside the documented 10% margin


def test_limits_from_the_host_link_and_the_cpu() -> None:
    gen5 = pcie_limit(5, None, 16, "NVML")
    assert gen5 is not None and gen5.value == pytest.approx(63.0, rel=0.01) and "Gen5 x16" in gen5.basis
    gen3 = pcie_limit(None, 8.0, 8, "sysfs")
    assert gen3 is not None and gen3.value == pytest.approx(7.88, rel=0.01)
    assert pcie_limit(None, None, 16, "x") is None
    # every generation at x16, one direction (per lane after line coding, times 16)
    for gen, gbs in ((1, 4.0), (2, 8.0), (3, 15.76), (4, 31.5), (5, 63.0), (6, 121.0)):
        limit = pcie_limit(gen, None, 16, "NVML")
        assert limit is not None and limit.value == pytest.approx(gbs, rel=0.01), gen
    gen1 = pcie_limit(1, None, 16, "sysfs")  # the slowest generation is in the table too
    assert gen1 is not None and gen1.value == pytest.approx(4.0) and "Gen1 x16" in gen1.basis
    between = pcie_limit(None, 12.0, 4, "sysfs")  # a rate the table lacks takes the next slower one's
    assert between is not None and between.value == pytest.approx(0.985 * 4)
    cpu = cpu_matmul_limit(16, 3000.0, ["avx2", "fma", "avx512f"], "fp32")
    assert cpu is not None and cpu.value == pytest.approx(16 * 3.0 * 64)
    amx = cpu_matmul_limit(16, 3000.0, ["avx512f", "amx_bf16"], "bf16")
    assert amx is not None and amx.value == pytest.approx(16 * 3.0 * 2048)
    assert cpu_matmul_limit(None, 3000.0, [], "fp32") is None


# -- telemetry paired with the right GPU --


def test_telemetry_is_matched_by_bus_id_under_a_reordered_visible_devices(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,0")
    samples = window(gpus=(gpu(0, clock=1980.0), gpu(1, clock=1200.0)))
    # torch's cuda:0 is the GPU at 2c:00.0, which NVML (unaffected by the variable) calls index 1
    measured = figure("cuda:0", pci_bus_id=BUS[1])
    assert gpu_index_for(measured, samples) == 1
    assert summarise(samples, 1)["sm_clock_mean_mhz"] == 1200.0
    by_uuid = figure("cuda:0", pci_bus_id=None, gpu_uuid="abc-1")
    with_uuid = window(gpus=(gpu(0, uuid="GPU-abc-0"), gpu(1, uuid="GPU-ABC-1")))
    assert gpu_index_for(by_uuid, with_uuid) == 1
    dropped = [*with_uuid[:-1], Sample(with_uuid[-1].t, with_uuid[-1].host, ())]  # the last read failed
    assert gpu_index_for(by_uuid, dropped) == 1


# -- SUSPECT only when something outside was wrong --


def test_power_cap_with_the_clock_near_its_max_is_a_note_not_a_reason() -> None:
    judged = judge(summarise(window(gpus=(gpu(0, 1960.0, ("power cap",)),)), 0), figure())
    assert judged.trust == "TRUSTED" and judged.reasons == []
    assert judged.notes == ["power-limited at 690 of 700 W with the SM clock at 99% of max: normal for this load"]


def test_a_clock_far_below_its_max_is_suspect() -> None:
    # issue 20: under the power cap the limit decides; with no default limit to compare, it stays SUSPECT
    judged = judge(summarise(window(gpus=(gpu(0, 1386.0, ("power cap",)),)), 0), figure())
    assert judged.trust == "SUSPECT" and judged.reasons == [
        "SM clock at 70% of max under the power cap (690 of 700 W), and the board's default power limit could not "
        "be read to rule out a lowered one; next: `nvidia-smi -q -d POWER`"
    ]
    at_default = gpu(0, 1386.0, ("power cap",), power_default_limit_w=700.0)
    assert judge(summarise(window(gpus=(at_default,)), 0), figure()).trust == "TRUSTED"
    plain = judge(summarise(window(gpus=(gpu(0, 1386.0),)), 0), figure())
    assert plain.reasons == [
        "SM clock at 70% of max: no reason reported; next: `nvidia-smi -q -d PERFORMANCE,CLOCK` "
        "(locked or application clocks?)"
    ]


def test_a_copy_with_a_low_sm_clock_is_trusted() -> None:
    copy = figure(value=4200.0, bound="memory")
    judged = judge(summarise(window(gpus=(gpu(0, 1386.0),)), 0), copy)
    assert judged.trust == "TRUSTED"
    slow_memory = judge(summarise(window(gpus=(gpu(0, 1386.0, mem_clock_mhz=1600.0),)), 0), copy)
    assert slow_memory.trust == "SUSPECT"
    assert slow_memory.reasons == ["memory clock at 50% of max; next: `nvidia-smi -q -d CLOCK,PERFORMANCE`"]


def test_a_clock_below_this_gpus_earlier_clean_runs_is_suspect() -> None:
    conditions = summarise(window(gpus=(gpu(0, 1700.0),)), 0)  # 86% of max: fine on its own
    assert judge(conditions, figure()).trust == "TRUSTED"
    assert judge(conditions, figure(), reference_clocks=[1850.0, 1880.0]).trust == "TRUSTED"
    judged = judge(conditions, figure(), reference_clocks=[1975.0, 1980.0, 1978.0])
    assert judged.trust == "SUSPECT"
    assert judged.reasons == [
        "SM clock 1,700 MHz, below the 1,978 MHz this GPU held for the same figure in 3 earlier clean run(s); "
        "next: `nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE`, and `rigcheck compare` with the earlier run"
    ]


def test_too_short_a_window_is_unjudged_and_the_annotator_widens_it() -> None:
    judged = judge(summarise(window(n=2), None), figure("cpu", 100.0, bound="host"))
    assert judged.trust == "UNJUDGED" and judged.reasons[0].startswith("too short to judge: 2 telemetry samples")

    class Buffer:
        interval = 0.01

        def __init__(self) -> None:
            now = time.time()
            host = HostSample(4, 0.1, busy_cpus=1.0, own_cpus=1.0)
            self.samples = [Sample(now - 2.0 + i * 0.1, host) for i in range(21)]

        def window(self, t0: float, t1: float) -> list[Sample]:
            return [s for s in self.samples if t0 <= s.t <= t1]

    buffer = Buffer()
    end = buffer.samples[-1].t
    short = Measurement("matmul", "x", 1.0, "GFLOP/s", 0.0, 5, "cpu", {"threads": 1}, t_start=end - 0.05, t=end)
    annotated = ConditionsAnnotator(buffer)(short)
    assert annotated.conditions["samples"] >= 10 and annotated.conditions["trust"] == "TRUSTED"


def test_one_burner_on_a_two_cpu_host_makes_a_cpu_figure_suspect() -> None:
    cpu_figure = figure("cpu", 150.0, bound="host", threads=2, pci_bus_id=None)
    burner = (ProcessUse(4242, "python3", cpus=1.0),)
    busy = judge(summarise(window(1.0, cpus=2, top=burner), None), cpu_figure)
    assert busy.trust == "SUSPECT"
    assert busy.reasons == [
        "other processes kept 1.0 of 2 CPUs busy while this figure needed 2: python3 (pid 4242, 1.0 CPUs); "
        "next: stop them, or rerun with `--wait-quiet`"
    ]
    assert judge(summarise(window(0.05, cpus=2), None), cpu_figure).trust == "TRUSTED"


def test_burners_on_every_cpu_make_a_gpu_figure_suspect_but_one_burner_on_sixteen_does_not() -> None:
    gpu_figure = figure()
    assert judge(summarise(window(15.1, cpus=16, gpus=(gpu(0),)), 0), gpu_figure).trust == "SUSPECT"
    assert judge(summarise(window(1.0, cpus=16, gpus=(gpu(0),)), 0), gpu_figure).trust == "TRUSTED"
    # seen on the H200 host: 32 burners left the figure's own thread its CPU, yet its core was shared
    assert judge(summarise(window(30.95, cpus=32, gpus=(gpu(0),)), 0), gpu_figure).trust == "SUSPECT"
    assert judge(summarise(window(16.0, cpus=32, gpus=(gpu(0),)), 0), gpu_figure).trust == "TRUSTED"


def test_another_process_on_the_gpu_is_named() -> None:
    rival = ProcessUse(777, "python3", gpu_memory=3 * 2**30)
    own = ProcessUse(10, "rigcheck-child", gpu_memory=2**30)
    conditions = summarise(window(gpus=(gpu(0, processes=(rival, own), process_pids=(777, 10)),)), 0)
    judged = judge(conditions, figure())
    assert judged.trust == "SUSPECT"
    assert judged.reasons == [
        "1 other process(es) on the GPU: python3 (pid 777, 3.0 GiB); next: `nvidia-smi` lists them: stop them or "
        "use another GPU"
    ]
    assert conditions["other_processes"][0] == {"pid": 777, "name": "python3", "gpu_memory": 3 * 2**30}


def test_noise_alone_is_noisy_not_suspect_and_launch_bound_is_said() -> None:
    noisy = figure(spread_rel=0.12, launch_bound=True, median_s=4e-6)
    judged = judge(summarise(window(gpus=(gpu(0),)), 0), noisy)
    assert judged.trust == "NOISY" and judged.reasons == ["timing spread 12% of the median"]
    assert judged.notes == ["launch-bound: one call takes 4.0 us, near the host's launch overhead"]


def test_earlier_clean_clocks_come_from_trusted_runs_of_the_same_gpu(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import sys

    from rigcheck.engine.store import Store

    store = Store(tmp_path / "s.db")
    for trust, uuid, clock in (("TRUSTED", "u0", 1975.0), ("SUSPECT", "u0", 1400.0), ("TRUSTED", "u1", 1500.0)):
        run = store.begin_run(["matmul"], "cuda:0", "standard", sys.executable, [])
        m = figure(gpu_uuid=uuid)
        store.record(
            run,
            Measurement(
                m.stage,
                m.name,
                700.0,
                "TFLOP/s",
                1.0,
                5,
                "cuda:0",
                m.params,
                {"trust": trust, "sm_clock_mean_mhz": clock},
            ),
        )
    later = store.begin_run(["matmul"], "cuda:0", "standard", sys.executable, [])
    assert store.earlier_clean_clocks(later, "matmul bf16 4096", "u0") == [1975.0]
    assert store.earlier_clean_clocks(later, "matmul bf16 4096", "u9") == []


def test_a_few_preempted_clock_reads_do_not_break_a_figure() -> None:
    # on a busy host a thread can be preempted between its two clock reads: a few pairs differ by ms
    times = tuple([0.057] * 10)
    checks = (0.057, 0.0571, 0.0570, 0.0621, 0.0570, 0.0675, 0.0570, 0.0571, 0.0570, 0.0570)
    assert TimingStats(times, checks, "perf_counter", "CLOCK_MONOTONIC_RAW").disagreement() is None
    skewed = tuple(t * 1.05 for t in times)  # every pair 5% apart: one clock runs fast
    reason = TimingStats(times, skewed, "perf_counter", "CLOCK_MONOTONIC_RAW").disagreement()
    assert reason is not None and reason.startswith("two host clocks disagree")


def test_a_device_timed_figure_is_busy_whatever_nvml_utilization_says() -> None:
    # NVML's utilization lags short bursts: an event-timed matmul on the H200 read 15% while busy
    lagging = gpu(0, 1386.0, utilization_pct=15.0)
    timed = figure(timer="events")
    assert judge(summarise(window(gpus=(lagging,)), 0), timed).trust == "SUSPECT"
    assert judge(summarise(window(gpus=(lagging,)), 0), figure()).trust == "TRUSTED"  # host-timed: not busy


def test_a_widened_window_does_not_judge_clocks_but_still_sees_contention() -> None:
    conditions = summarise(window(gpus=(gpu(0, 1088.0),)), 0) | {"widened": True}
    judged = judge(conditions, figure(timer="events"), reference_clocks=[1900.0, 1950.0])
    assert judged.trust == "TRUSTED" and judged.notes[0].startswith("shorter than the telemetry's sampling")
    busy = summarise(window(15.5, cpus=16, gpus=(gpu(0, 1088.0),)), 0) | {"widened": True}
    assert judge(busy, figure(timer="events")).trust == "SUSPECT"


def test_one_idle_sample_does_not_excuse_a_low_clock() -> None:
    samples = window(gpus=(gpu(0, 1188.0),))
    samples[0] = Sample(samples[0].t, samples[0].host, (gpu(0, 345.0, ("idle",)),))
    conditions = summarise(samples, 0)
    assert conditions["idle_share"] < 0.5 and conditions["sm_clock_mean_mhz"] == 1188.0  # the busy samples'
    judged = judge(conditions, figure(timer="events"))
    assert judged.trust == "SUSPECT" and judged.reasons[0].startswith("SM clock at 60% of max: no reason reported")


def test_an_arm_cpu_is_bounded_by_its_own_fma_pipes() -> None:
    arm = cpu_matmul_limit(72, 3438.0, [], "fp32", "aarch64")
    assert arm is not None and arm.value == pytest.approx(72 * 3.438 * 32)  # Grace: 7,921 GFLOP/s
    x86 = cpu_matmul_limit(72, 3438.0, [], "fp32")
    assert x86 is not None and x86.value == pytest.approx(72 * 3.438 * 16)


def test_children_on_other_gpus_take_turns_at_the_host_link(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import threading

    from rigcheck.engine.stages.common.shared_cache import SHARED_DIR_ENV, one_at_a_time

    monkeypatch.setenv(SHARED_DIR_ENV, str(tmp_path))
    inside: list[int] = []
    overlap: list[int] = []

    def copy() -> None:
        with one_at_a_time("host-link"):
            inside.append(1)
            overlap.append(len(inside))
            time.sleep(0.1)
            inside.pop()

    threads = [threading.Thread(target=copy) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlap == [1, 1, 1]


def test_the_host_link_limit_comes_from_nvml_through_the_shared_binding(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from fakes import build_fake_nvml
    from rigcheck.engine.hw import nvml
    from rigcheck.engine.stages.common import limits

    monkeypatch.setattr(nvml, "LIBRARY", str(build_fake_nvml(tmp_path)))
    limits._nvml_link.cache_clear()
    found = limits._nvml_link("0000:3b:00.0")
    assert found is not None and found.value == pytest.approx(63.0, rel=0.01) and "Gen5 x16" in found.basis
    assert limits._nvml_link("0000:99:00.0") is None  # a GPU NVML does not list
    limits._nvml_link.cache_clear()
