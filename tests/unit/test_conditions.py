"""Conditions and trust: reasons in words for each kind of contention, TRUSTED when there is none."""

from __future__ import annotations

import itertools
import time

import pytest
from fakes import FakeNvml
from rigcheck.engine.events import Measurement
from rigcheck.engine.telemetry import sampler as sampler_module
from rigcheck.engine.telemetry.nvml import NvmlSource
from rigcheck.engine.telemetry.sample import HostSample, Sample
from rigcheck.engine.telemetry.sampler import Sampler
from rigcheck.engine.trust.conditions import (
    ConditionsAnnotator,
    Judgement,
    TrustPolicy,
    judge,
    nvml_index,
    summarise,
)
from rigcheck.engine.trust.contention import contention_report


def samples(others: float = 0.0, sm_clock: int = 1980, reasons: int = 0, pids=(), n: int = 5) -> list[Sample]:  # type: ignore[no-untyped-def]
    gpu = NvmlSource(FakeNvml(sm_clock=sm_clock, reasons=reasons, pids=pids)).read()
    host = HostSample(cpus=32, load1=1.0, busy_cpus=others + 1.0, own_cpus=1.0, own_pids=(1,))
    return [Sample(1000.0 + i * 0.1, host, tuple(gpu)) for i in range(n)]


def figure(value: float = 700.0, spread: float = 3.0, **params) -> Measurement:  # type: ignore[no-untyped-def]
    return Measurement("matmul", "bf16 4096", value, "TFLOP/s", spread, 10, "cuda:0", params)


def test_quiet_and_full_clock_is_trusted() -> None:
    conditions = summarise(samples(), 0)
    assert conditions["clock_ratio"] == 1.0 and conditions["host_others_cpus"] == 0.0
    assert judge(conditions, figure()) == Judgement("TRUSTED", [], [])


def test_host_contention_that_took_the_figures_cpus_is_named() -> None:
    judged = judge(summarise(samples(others=31.5), 0), figure())
    assert judged.trust == "SUSPECT"
    assert judged.reasons == [
        "other processes kept 31.5 of 32 CPUs busy while this figure needed 1; next: stop them, or rerun with "
        "`--wait-quiet`"
    ]


def test_low_clock_without_a_cause_in_the_load_is_suspect() -> None:
    judged = judge(summarise(samples(sm_clock=1208), 0), figure())
    assert judged.trust == "SUSPECT" and judged.reasons == [
        "SM clock at 61% of max: no reason reported; next: `nvidia-smi -q -d PERFORMANCE,CLOCK` "
        "(locked or application clocks?)"
    ]


def test_thermal_throttle_other_gpu_processes_and_noise() -> None:
    conditions = summarise(samples(reasons=0x40, pids=(1, 777)), 0)
    assert conditions["other_gpu_pids"] == [777]  # pid 1 is rigcheck's own
    judged = judge(conditions, figure(100.0, 12.0))
    assert judged.trust == "SUSPECT"
    assert judged.reasons == [
        "1 other process(es) on the GPU: ? (pid 777, 0 MiB); next: `nvidia-smi` lists them: stop them or use "
        "another GPU",
        "clocks held back by hardware thermal slowdown; next: `nvidia-smi -q -d PERFORMANCE,TEMPERATURE`; "
        "check the fans, the airflow and the inlet temperature",
    ]
    assert judged.notes == ["timing spread 12% of the median"]


def test_idle_gpu_low_clock_is_not_blamed() -> None:
    assert judge(summarise(samples(sm_clock=345, reasons=0x1), 0), figure(1.0, 0.0)).trust == "TRUSTED"


def test_nvml_index_follows_visible_devices() -> None:
    assert nvml_index("cpu") is None
    assert nvml_index("cuda:1", {"CUDA_VISIBLE_DEVICES": "3,5"}) == 5
    assert nvml_index("cuda:0", {}) == 0


class FakeHostSource:
    def __init__(self, others: float) -> None:
        self.others = others

    def read(self) -> HostSample:
        return HostSample(cpus=4, load1=None, busy_cpus=self.others, own_cpus=0.0)


def test_annotator_attaches_conditions_from_the_window() -> None:
    sampler = Sampler(interval=0.05, host=FakeHostSource(3.5), gpus=[]).start()
    try:
        start = time.time()
        time.sleep(0.4)
        measurement = Measurement("matmul", "bf16 4096", 700.0, "TFLOP/s", 1.0, 10, "cpu", t_start=start)
        annotated = ConditionsAnnotator(sampler)(measurement)
    finally:
        sampler.stop()
    conditions = annotated.conditions
    # no more samples than the schedule allows (a busy host may take fewer: the sampler skips late ticks)
    assert 1 <= conditions["samples"] <= (measurement.t - start) / 0.05 + 2
    assert conditions["trust"] == "SUSPECT"
    assert conditions["trust_reasons"] == [
        "other processes kept 3.5 of 4 CPUs busy while this figure needed 1; next: stop them, or rerun with "
        "`--wait-quiet`"
    ]


class FakeClock:
    """The sampler module's clock: sleeping moves it on at once, and each host read costs `cost` seconds (the
    read numbered `slow_read` costs `slow_cost`), so the schedule is judged without the machine's own pace."""

    def __init__(self, cost: float, slow_read: int = -1, slow_cost: float = 0.0) -> None:
        self.now, self.reads, self.cost, self.slow_read, self.slow_cost = 1000.0, 0, cost, slow_read, slow_cost

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += max(0.0, seconds)

    def read(self) -> HostSample:
        self.now += self.slow_cost if self.reads == self.slow_read else self.cost
        self.reads += 1
        return HostSample(cpus=4, load1=None, busy_cpus=0.0, own_cpus=0.0)


def sampled_ticks(monkeypatch: pytest.MonkeyPatch, clock: FakeClock, count: int = 40) -> list[int]:
    """The first `count` samples' times, as ticks of 0.05 s from the first, checked to fall on the grid."""
    monkeypatch.setattr(sampler_module, "time", clock)
    host = FakeHostSource(0.0)
    host.read = clock.read  # type: ignore[method-assign]
    sampler = Sampler(interval=0.05, host=host, gpus=[]).start()
    deadline = time.monotonic() + 60
    while len(sampler.buffer) < count:
        assert time.monotonic() < deadline, "the sampler thread did not run"
        time.sleep(0.01)
    sampler.stop()
    times = [s.t for s in list(sampler.buffer)[:count]]
    ticks = [(t - times[0]) / 0.05 for t in times]
    assert all(abs(k - round(k)) < 1e-6 for k in ticks), ticks  # on the schedule: no drift at all
    return [round(k) for k in ticks]


def test_sampler_runs_without_drift(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each read costs a fifth of the interval: the samples still land on the 0.05 s grid, one per tick."""
    assert sampled_ticks(monkeypatch, FakeClock(cost=0.01)) == list(range(40))


def test_a_slow_read_skips_the_ticks_it_missed_rather_than_bunching_up(monkeypatch: pytest.MonkeyPatch) -> None:
    ticks = sampled_ticks(monkeypatch, FakeClock(cost=0.01, slow_read=5, slow_cost=0.12))
    assert ticks[:6] == list(range(6))
    assert ticks[6] == 8  # the read at tick 5 ended at 5.4 ticks' time: ticks 6 and 7 are gone, not caught up
    assert all(b - a == 1 for a, b in itertools.pairwise(ticks[6:]))


def test_the_real_sampler_keeps_to_its_schedule_on_this_machine() -> None:
    sampler = Sampler(interval=0.05, host=FakeHostSource(0.0), gpus=[]).start()
    time.sleep(1.0)
    sampler.stop()
    times = [s.t for s in sampler.buffer]
    assert 2 <= len(times) <= 1.0 / 0.05 + 3  # never more than the schedule; a busy host skips late ticks
    assert all(b > a for a, b in itertools.pairwise(times))  # the schedule itself is judged on a fake clock above


def test_sampler_window_gives_the_samples_inside_or_the_nearest_on_each_side() -> None:
    sampler = Sampler(interval=0.1, host=FakeHostSource(0.0), gpus=[])
    sampler.buffer.extend(Sample(float(t), None, ()) for t in range(10))  # type: ignore[arg-type]
    assert [s.t for s in sampler.window(3.0, 5.0)] == [3.0, 4.0, 5.0]
    assert [s.t for s in sampler.window(4.2, 4.8)] == [4.0, 5.0]
    assert [s.t for s in sampler.window(-5.0, -1.0)] == [0.0]
    assert [s.t for s in sampler.window(20.0, 30.0)] == [9.0]


def test_contention_report_bands_clock_by_host_load() -> None:
    quiet = [s.to_dict() for s in samples(others=1.0, sm_clock=2084)]
    busy = [s.to_dict() for s in samples(others=20.0, sm_clock=1059)]
    report = contention_report(quiet + busy, [])
    bands = {row["others_share"]: row for row in report["clock_by_host_load"]}
    assert bands["0%-10%"]["sm_clock_mean_mhz"] == 2084 and bands["0%-10%"]["samples"] == 5
    assert bands["50%-100%"]["sm_clock_mean_mhz"] == 1059
    assert bands["10%-25%"]["samples"] == 0


def test_the_others_floor_grows_with_the_cpu_set_to_its_whole_at_sixteen() -> None:
    policy = TrustPolicy()
    assert policy.floor(1, 2) == pytest.approx(0.1)  # a small set: no less than a quiet CPU's own background
    assert policy.floor(1, 8) == pytest.approx(0.5 * 8 / 16)  # past it, a share of the floor
    assert policy.floor(1, 16) == pytest.approx(0.5) and policy.floor(1, 64) == pytest.approx(0.5)
    assert policy.floor(64, 64) == pytest.approx(0.05 * 64)  # many threads: a share of them


def test_a_short_window_is_widened_only_when_it_holds_too_few_samples() -> None:
    sampler = Sampler(interval=0.125, host=FakeHostSource(0.0), gpus=[])
    sampler.buffer.extend(Sample(k * 0.125, None, ()) for k in range(80))  # type: ignore[arg-type]
    annotator = ConditionsAnnotator(sampler)
    samples, widened = annotator.window(5.0, 5.5)  # 0.5 s, shorter than widen_s, but five samples
    assert (len(samples), widened) == (5, False)
    samples, widened = annotator.window(5.0, 5.125)  # two samples: too few to judge, so widened to 1 s
    assert (len(samples), widened) == (9, True)


def test_a_figure_with_no_samples_says_so() -> None:
    sampler = Sampler(interval=0.05, host=FakeHostSource(0.0), gpus=[])  # never started: no samples at all
    figure = ConditionsAnnotator(sampler)(Measurement("matmul", "x", 1.0, "GFLOP/s", 0.0, 5, "cpu"))
    assert (figure.conditions["samples"], figure.conditions["window_s"]) == (0, 0.0)
