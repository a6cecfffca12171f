"""The HTML report's parts alone: samples into timelines, figures into peer groups, plots drawn as SVG."""

from __future__ import annotations

import math

from rigcheck.engine.report.html_figures import peers
from rigcheck.engine.report.html_timeline import BUCKETS, stage_spans, thinned, timelines
from rigcheck.engine.report.svg_plots import Band, Line, line_plot, nice_ticks


def sample(t: float, gpus: list[dict], **host: object) -> dict:  # type: ignore[type-arg]
    return {"t": t, "host": {"cpus": 8, "load1": 1.0, "busy_cpus": 2.0, "others_cpus": 0.5} | host, "gpus": gpus}


def gpu(index: int, **readings: object) -> dict:  # type: ignore[type-arg]
    return {"index": index, "name": "NVIDIA H200"} | readings


def test_a_missing_reading_is_a_gap_and_a_sensor_never_read_is_left_out() -> None:
    samples = [
        sample(100.0, [gpu(0, sm_clock_mhz=1980, temperature_c=None), gpu(1, sm_clock_mhz=1975)]),
        sample(101.0, [gpu(0, sm_clock_mhz=None)]),  # GPU 1 dropped out, GPU 0's clock unread
        sample(102.0, [gpu(0, sm_clock_mhz=1450), gpu(1, sm_clock_mhz=1440)]),
    ]
    clock, temperature, power, load = timelines(samples, started=99.0)
    assert [s.label for s in clock.series] == ["GPU 0 SM clock", "GPU 1 SM clock"]
    zero, one = clock.series
    assert zero.t == (1.0, 2.0, 3.0) and zero.gpu == 0
    assert zero.values[0] == 1980 and math.isnan(zero.values[1]) and zero.values[2] == 1450
    assert math.isnan(one.values[1])
    assert temperature.series == () and power.series == ()  # no reading at all: no line, no zeros
    assert load.title == "Host load (of 8 CPUs)" and [s.gpu for s in load.series] == [None] * 3


def test_one_gpu_is_named_with_its_model() -> None:
    clock = timelines([sample(1.0, [gpu(3, sm_clock_mhz=1000)])], started=0.0)[0]
    assert clock.series[0].label == "GPU 3 (NVIDIA H200) SM clock"


def test_stage_spans_are_this_hosts_finished_stages() -> None:
    stages = [
        {"name": "probe", "started": 10.0, "finished": 12.0, "host": ""},
        {"name": "matmul", "started": 12.5, "finished": None, "host": ""},  # still running, or cut off
        {"name": "matmul", "started": 11.0, "finished": 20.0, "host": "other"},
    ]
    assert [(s.name, s.start, s.end) for s in stage_spans(stages, 10.0)] == [("probe", 0.0, 2.0)]


def figure(device: str, value: float, trust: str = "TRUSTED", name: str = "matmul bf16 8192") -> dict:  # type: ignore[type-arg]
    return {
        "id": hash((device, name)),
        "stage": "matmul",
        "name": name,
        "value": value,
        "unit": "TFLOP/s",
        "device": device,
        "host": "",
        "params": {"bound": "compute", "timer": "events"},
        "conditions": {"trust": trust, "gpu_name": "NVIDIA H200"},
    }


def test_peers_use_the_runs_tolerance_and_leave_out_noisy_figures() -> None:
    rows = [figure("cuda:0", 750.0), figure("cuda:1", 705.0), figure("cuda:2", 300.0, trust="NOISY")]
    report = {"measurements": rows, "verdicts": []}
    (group,) = peers(report)
    assert [(b.label, b.slow) for b in group.bars] == [("cuda:0", False), ("cuda:1", False)]  # 6% < 10%
    report["verdicts"] = [{"check_name": "peers", "tolerance": 0.05, "status": "PASS"}]  # --peer-tolerance 5
    (group,) = peers(report)
    assert group.tolerance == 0.05 and [b.slow for b in group.bars] == [False, True]


def test_one_gpu_has_no_peers() -> None:
    assert peers({"measurements": [figure("cuda:0", 750.0), figure("cpu", 2.0)], "verdicts": []}) == []


def test_a_hand_drawn_plot_breaks_its_line_at_a_gap_and_escapes_its_text() -> None:
    lines = [Line("<b>GPU</b> & co", [0.0, 1.0, 2.0, 3.0], [10.0, math.nan, 30.0, 40.0], "#1f77b4")]
    svg = line_plot("Clocks $x$", "MHz", "time (s)", lines, [Band("probe", 0.0, 1.0, True)])
    assert svg.count("<polyline") == 2  # one run before the gap, one after: never a line across it
    assert "&lt;b&gt;GPU&lt;/b&gt; &amp; co" in svg and "<b>" not in svg and "Clocks $x$" in svg
    assert "://" not in svg and "xmlns" not in svg
    assert nice_ticks(0.0, 1980.0, cover=True) == [0.0, 500.0, 1000.0, 1500.0, 2000.0]  # the top above the line
    assert nice_ticks(0.0, 7.0) == [0.0, 2.0, 4.0, 6.0] and nice_ticks(0.0, 7.0, cover=True)[-1] == 8.0


def test_a_long_run_is_thinned_but_keeps_every_dip_and_gap() -> None:
    points = [(float(t), 1980.0) for t in range(10_000)]
    points[4321] = (4321.0, 1100.0)  # one sample at a throttle
    points[7000:7100] = [(float(t), math.nan) for t in range(7000, 7100)]  # the sensor went silent
    kept = thinned(points)
    assert len(kept) <= 2 * BUCKETS
    assert (4321.0, 1100.0) in kept and [t for t, _ in kept] == sorted(t for t, _ in kept)
    assert any(math.isnan(v) for t, v in kept if 7000 <= t < 7100)
    assert thinned(points[:100]) == points[:100]  # a short run is drawn as it is
