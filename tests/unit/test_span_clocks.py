"""Issue 31, item 5: a figure shorter than the telemetry's sampling is judged on the clocks, power and clock-event
reasons read at its own timed span's start and end, not left "clocks not judged"."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fakes import FakeNvml, build_fake_nvml
from rigcheck.engine.events import Measurement
from rigcheck.engine.hw import nvml as hw_nvml
from rigcheck.engine.measure.stats import TimingStats
from rigcheck.engine.stages.common import span_clocks
from rigcheck.engine.stages.common.figures import timing_params
from rigcheck.engine.telemetry.nvml import NvmlSource
from rigcheck.engine.telemetry.sample import HostSample, Sample
from rigcheck.engine.trust.conditions import ConditionsAnnotator

END = 1000.0
START = END - 0.15  # 40 ms of timed groups and their set-up: under the sampling's three samples
HOST = HostSample(cpus=32, load1=1.0, busy_cpus=1.0, own_cpus=1.0, own_pids=(1,))
NOT_JUDGED = "shorter than the telemetry's sampling: clocks not judged (its window held earlier work)"


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that has not opened NVML for a span yet."""
    monkeypatch.setattr(span_clocks, "_nvml", [])
    monkeypatch.setattr(span_clocks, "_readers", {})


def test_a_span_reads_the_gpu_at_its_address_through_the_stand_in_driver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None
) -> None:
    monkeypatch.setattr(hw_nvml, "LIBRARY", str(build_fake_nvml(tmp_path)))
    reader = span_clocks.reader_for("0000:18:00.0")
    assert reader is not None and reader.read() == (1980, 3201, 126.0, 1)
    assert span_clocks.reader_for("0000:99:00.0") is None  # no GPU there: nothing read, never another GPU's
    span = span_clocks.Span(reader)
    found = span.finish()
    assert found is not None
    assert (found["sm_mhz"], found["mem_mhz"], found["power_w"]) == ([1980, 1980], [3201, 3201], [126.0, 126.0])
    assert (found["reasons"], found["max_sm_mhz"], found["max_mem_mhz"]) == (["idle"], 1980, 3201)
    assert 0.0 < found["cost_s"] < 0.05 and found["span_s"] >= 0.0
    stats = span_clocks.record(TimingStats((1e-3, 1e-3)), span)
    assert timing_params(stats)["span_clocks"] is found


def test_the_idle_probe_reads_the_driver_samples_once_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None
) -> None:
    monkeypatch.setattr(hw_nvml, "LIBRARY", str(build_fake_nvml(tmp_path)))
    slept: list[float] = []
    monkeypatch.setattr(span_clocks, "PROBE_S", 0.35)  # the stand-in samples every 100 ms
    monkeypatch.setattr(span_clocks, "_sleep", lambda s: (slept.append(s), time.sleep(s)))
    monkeypatch.setattr(span_clocks, "_probes", {})
    monkeypatch.setenv("FAKE_NVML_SCENE", "unseen")  # another namespace keeps the first GPU busy
    reader = span_clocks.reader_for("0000:18:00.0")
    found = span_clocks.probe_if_due("0000:18:00.0", reader)
    assert found is not None and slept == [span_clocks.PROBE_S]
    assert found["samples"] >= 2  # those whose whole 100 ms fell in the idle 350 ms
    assert (found["utilization_pct"], found["utilization_max_pct"], found["power_w"]) == (100.0, 100.0, 126.0)
    assert span_clocks.probe_if_due("0000:18:00.0", reader) is found and len(slept) == 1  # not due again yet
    quiet = span_clocks.probe_if_due("0000:3b:00.0", span_clocks.reader_for("0000:3b:00.0"))
    assert quiet is not None and quiet["utilization_max_pct"] == 0.0
    result = span_clocks.Span(reader, found).finish()
    assert result is not None and result["idle_probe"]["utilization_pct"] == 100.0 and "at" not in result["idle_probe"]


def test_without_nvml_a_span_reads_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    monkeypatch.setattr(hw_nvml, "LIBRARY", str(tmp_path / "absent.so"))
    span = span_clocks.Span(span_clocks.reader_for("0000:18:00.0"))
    assert span.finish() is None
    assert timing_params(span_clocks.record(TimingStats((2e-3,)), span))["span_clocks"] is None


class Buffer:
    interval = 0.1

    def __init__(self, samples: list[Sample]) -> None:
        self.samples = samples

    def window(self, t0: float, t1: float) -> list[Sample]:
        return [s for s in self.samples if t0 <= s.t <= t1]


def short_figure(span: dict | None, **more: object) -> dict:
    """A short figure whose window is widened back over earlier work at the full clock and no cap."""
    gpu = tuple(NvmlSource(FakeNvml(sm_clock=1980, reasons=0, pids=(1,))).read())  # rigcheck own child listed
    samples = [Sample(END - 1.0 + i * 0.1, HOST, gpu) for i in range(11)]
    params = {"bound": "compute", "threads": 1, "spread_rel": 0.01, "timer": "events", "span_clocks": span, **more}
    figure = Measurement("matmul", "bf16 1024", 600.0, "TFLOP/s", 1.0, 20, "cuda:0", params, t_start=START, t=END)
    return ConditionsAnnotator(Buffer(samples))(figure).conditions


def span(sm: list[int], reasons: list[str], power: list[float]) -> dict:
    return {
        "sm_mhz": sm,
        "mem_mhz": [3201, 3201],
        "power_w": power,
        "reasons": reasons,
        "max_sm_mhz": 1980,
        "max_mem_mhz": 3201,
    }


def test_a_short_figure_at_a_low_clock_is_suspect_by_its_own_span() -> None:
    conditions = short_figure(span([1000, 990], ["idle"], [300.0, 290.0]))
    assert conditions["widened"] and conditions["clocks_from"] == "span"
    assert conditions["trust"] == "SUSPECT"
    assert conditions["trust_reasons"][0].startswith("SM clock at 50% of max: no reason reported; next: ")
    assert conditions["sm_clock_mean_mhz"] == 995.0 and conditions["throttle"] == []  # 'idle': read after the calls
    assert NOT_JUDGED not in conditions["notes"]


def test_a_short_figure_at_the_power_cap_near_full_clock_is_trusted_with_its_note() -> None:
    conditions = short_figure(span([1960, 1940], ["power cap"], [695.0, 700.0]))
    assert conditions["trust"] == "TRUSTED", conditions["trust_reasons"]
    assert conditions["notes"] == [
        "power-limited at 698 of 700 W with the SM clock at 98% of max: normal for this load"
    ]


def test_a_short_figure_under_a_thermal_slowdown_is_suspect() -> None:
    conditions = short_figure(span([1400, 1380], ["hardware thermal slowdown"], [400.0, 400.0]))
    assert conditions["trust"] == "SUSPECT"
    assert conditions["trust_reasons"][0].startswith("clocks held back by hardware thermal slowdown")


def test_without_span_readings_a_short_figure_keeps_the_old_note() -> None:
    conditions = short_figure(None)
    assert conditions["notes"] == [NOT_JUDGED] and "clocks_from" not in conditions


def test_a_launch_bound_figure_is_not_faulted_for_its_clock() -> None:
    low = span([1000, 990], [], [150.0, 150.0])
    conditions = short_figure(low, launch_bound=True, median_s=20e-6)
    assert conditions["trust"] == "TRUSTED" and conditions["clocks_from"] == "span"


class Driver:
    """Utilization samples every `period_s` around now, busy throughout (its own last work included)."""

    def __init__(self, period_s: float) -> None:
        self.period_us = int(period_s * 1e6)

    def samples(self, handle: object, kind: int, since_us: int) -> list[tuple[int, float]]:
        now = int(time.time() * 1e6)
        return [(t, 100.0) for t in range(since_us + self.period_us, now + 1, self.period_us)]

    def power_usage(self, handle: object) -> int:
        return 300_000


def test_a_sample_whose_period_reaches_back_before_the_idle_time_is_not_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(span_clocks, "PROBE_S", 0.3)
    reader = span_clocks.SpanReader.__new__(span_clocks.SpanReader)
    reader.nvml, reader.handle = Driver(1.0), None  # a product that samples once a second: none fits in 0.3 s
    assert span_clocks.idle_probe(reader) is None
    reader.nvml = Driver(0.05)
    found = span_clocks.idle_probe(reader)
    assert found is not None and found["samples"] >= 3 and found["power_w"] == 300.0
