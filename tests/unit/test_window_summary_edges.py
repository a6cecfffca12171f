"""A figure's window reduced to its conditions, at each edge: a process named at 0.05 CPU and not below, the five
busiest of more, a steady burner through a window of more than 256 samples, the GPU found by bus id in any sample,
the CPU set's and the quota's others, GPU rivals without a name, and a GPU's clocks from its busy samples alone."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.events import Measurement
from rigcheck.engine.telemetry.sample import GpuSample, HostSample, ProcessUse, Sample
from rigcheck.engine.trust.summary import busiest_others, gpu_index_for, steady_others, summarise


def host(others: tuple[ProcessUse, ...] = (), **kw: Any) -> HostSample:
    fields: dict[str, Any] = {"cpus": 8, "load1": 1.0, "busy_cpus": 2.0, "own_cpus": 1.0, "own_pids": (1,)}
    return HostSample(**(fields | {"others_now": others} | kw))


def gpu(index: int = 0, **kw: Any) -> GpuSample:
    fields: dict[str, Any] = {"name": "NVIDIA H200", "vendor": "NVIDIA", "source": "nvml", "max_sm_clock_mhz": 2000.0}
    return GpuSample(index, **(fields | kw))


def samples(hosts: list[HostSample], gpus: list[tuple[GpuSample, ...]] | None = None) -> list[Sample]:
    gpus = gpus or [()] * len(hosts)
    return [Sample(100.0 + 0.5 * i, h, g) for i, (h, g) in enumerate(zip(hosts, gpus, strict=True))]


@pytest.mark.parametrize(("cpus", "named"), [(0.2, True), (0.19, False)])
def test_a_process_is_named_from_a_twentieth_of_a_cpu_over_the_window(cpus: float, named: bool) -> None:
    window = samples([host((ProcessUse(7, "blip", cpus),))] + [host((ProcessUse(7, "blip", 0.0),))] * 3)
    assert ([p["pid"] for p in busiest_others(window, {1})] == [7]) is named  # a mean of 0.05 and of 0.0475


def test_the_five_busiest_are_named_busiest_first_never_rigcheck_s_own() -> None:
    procs = (*(ProcessUse(10 + k, f"p{k}", 0.1 * (k + 1)) for k in range(7)), ProcessUse(1, "rigcheck", 9.0))
    window = samples([host(procs)] * 2)
    named = busiest_others(window, {1})
    assert [p["pid"] for p in named] == [16, 15, 14, 13, 12]
    assert named[0] == {"pid": 16, "name": "p6", "cpus": 0.7}


def test_a_steady_burner_through_a_long_window_is_steady_and_one_gap_is_not() -> None:
    n = 300  # past 256: counts are compared by value, not as the one object CPython keeps for small ints
    burner = ProcessUse(42, "burn", 1.0)
    window = samples([host((burner,)) for _ in range(n)])
    assert [p["pid"] for p in steady_others(window, {1})] == [42]
    gapped = samples([host((burner,) if i != n // 2 else ()) for i in range(n)])
    assert steady_others(gapped, {1}) == []
    assert steady_others([], {1}) == []
    assert "host_steady_others" in summarise(window, None) and "host_steady_others" not in summarise(gapped, None)


def test_the_gpu_is_found_by_bus_id_in_any_sample_of_its_window_else_by_position() -> None:
    m = Measurement("matmul", "x", 1.0, "TFLOP/s", device="cuda:0", params={"pci_bus_id": "0000:1b:00.0"})
    found = (gpu(3, pci_bus_id="0000:1b:00.0"),)
    assert gpu_index_for(m, samples([host(), host()], [found, ()])) == 3  # the last tick lost its GPUs
    assert gpu_index_for(m, samples([host()], [(gpu(5, pci_bus_id="0000:99:00.0"),)])) == 0  # by position
    assert gpu_index_for(Measurement("matmul", "x", 1.0, "GFLOP/s", device="cpu"), samples([host()], [found])) is None


def test_the_cpu_set_s_others_are_over_the_samples_that_read_it_and_never_below_zero() -> None:
    window = samples([host(set_cpus=2, set_busy_cpus=1.6), host(set_cpus=2, set_busy_cpus=None), host(set_cpus=2)])
    out = summarise(window, None)
    assert out["cpu_set_size"] == 2 and out["cpu_set_others_cpus"] == 0.6  # 1.6 less own 1.0; the unread not 0
    quiet = summarise(samples([host(set_cpus=2, set_busy_cpus=0.8)] * 2), None)
    assert quiet["cpu_set_others_cpus"] == 0.0
    assert "cpu_set_size" not in summarise(samples([host(set_busy_cpus=1.6)]), None)  # no set: nothing narrows


def test_the_quota_s_others_and_the_limit_in_words() -> None:
    window = samples([host(quota_cpus=2.5, group_busy_cpus=1.5, cpu_limit="cgroup quota"), host(quota_cpus=2.5)])
    out = summarise(window, None)
    assert (out["cpu_quota"], out["cpu_quota_others_cpus"], out["cpu_limit"]) == (2.5, 0.5, "cgroup quota")
    assert "cpu_quota_others_cpus" not in summarise(samples([host(quota_cpus=2.5)]), None)
    assert not {"cpu_quota", "cpu_limit"} & set(summarise(samples([host(group_busy_cpus=3.0)]), None))


def test_gpu_rivals_are_named_where_known_and_counted_where_only_their_pid_is() -> None:
    one = gpu(processes=(ProcessUse(9, "rival", gpu_memory=2**29), ProcessUse(1, "rigcheck", gpu_memory=2**30)))
    two = gpu(process_pids=(1, 9, 4))
    out = summarise(samples([host(), host()], [(one,), (two,)]), 0)
    assert out["other_gpu_processes"] == [
        {"pid": 4, "name": "?", "gpu_memory": None},
        {"pid": 9, "name": "rival", "gpu_memory": 2**29},
    ]
    assert out["other_gpu_pids"] == [4, 9] and out["other_processes"][:2] == out["other_gpu_processes"]


def test_a_gpu_s_clocks_are_its_busy_samples_and_one_sample_is_a_window() -> None:
    busy = [gpu(sm_clock_mhz=1800.0, utilization_pct=99.0, mem_clock_mhz=2500.0, max_mem_clock_mhz=2600.0)] * 3
    idle = [gpu(sm_clock_mhz=300.0, throttle=("idle",), utilization_pct=0.0, mem_clock_mhz=2500.0)]
    out = summarise(samples([host()] * 4, [(g,) for g in busy + idle]), 0)
    assert out["sm_clock_mean_mhz"] == 1800.0 and out["sm_clock_min_mhz"] == 1800.0 and out["clock_ratio"] == 0.9
    assert out["idle_share"] == 0.25 and out["window_s"] == 1.5 and out["samples"] == 4
    assert out["mem_clock_ratio"] == round(2500 / 2600, 3)
    lone = summarise(samples([host(load1=3.0)], [(busy[0],)]), 0)
    assert lone["clock_ratio"] == 0.9 and lone["window_s"] == 0.0 and lone["host_load1"] == 3.0
    all_idle = summarise(samples([host()] * 2, [(idle[0],)] * 2), 0)
    assert all_idle["sm_clock_mean_mhz"] == 300.0 and all_idle["idle_share"] == 1.0  # nothing busy: every sample
    assert "gpu_index" not in summarise(samples([host()], [(busy[0],)]), 1)  # another GPU's samples are not its
    assert summarise([], 0) == {}


def test_the_host_figures_over_the_window() -> None:
    window = samples([host(busy_cpus=3.0, own_cpus=1.0, load1=2.0), host(busy_cpus=1.0, own_cpus=1.0, load1=None)])
    out = summarise(window, None)
    assert (out["host_others_cpus"], out["host_own_cpus"], out["host_load1"], out["host_cpus"]) == (1.0, 1.0, 2.0, 8)


def test_a_set_read_as_idle_counts_as_zero_in_its_mean() -> None:
    window = samples(
        [host(set_cpus=2, set_busy_cpus=0.0, own_cpus=0.0), host(set_cpus=2, set_busy_cpus=2.0, own_cpus=0.0)]
    )
    assert summarise(window, None)["cpu_set_others_cpus"] == 1.0


def test_the_stored_figures_keep_their_digits() -> None:
    """What the store, the reports and `rigcheck compare` read back: CPUs to 2 places, seconds and ratios to 3,
    clocks to 1; a board's limits as its window's first sample read them."""
    third = [
        host(set_cpus=3, set_busy_cpus=b, own_cpus=0.0, quota_cpus=2.0, group_busy_cpus=b) for b in (1.0, 0.0, 0.0)
    ]
    out = summarise(samples(third), None)
    assert (out["cpu_set_others_cpus"], out["cpu_quota_others_cpus"]) == (0.33, 0.33)
    first = gpu(sm_clock_mhz=1800.0, mem_clock_mhz=2500.4, max_mem_clock_mhz=2600.0, utilization_pct=99.0,
                power_limit_w=700.0, power_default_limit_w=700.0, power_max_limit_w=700.0)  # fmt: skip
    later = gpu(sm_clock_mhz=1800.0, mem_clock_mhz=2500.4, max_mem_clock_mhz=2600.0, utilization_pct=99.0,
                power_limit_w=500.0, power_default_limit_w=700.0, power_max_limit_w=800.0)  # fmt: skip
    window = [Sample(100.0, host(), (first,)), Sample(100.12345, host(), (later,))]
    out = summarise(window, 0)
    assert out["window_s"] == 0.123 and out["clock_ratio"] == 0.9 and out["mem_clock_mean_mhz"] == 2500.4
    assert (out["power_limit_w"], out["power_max_limit_w"]) == (700.0, 700.0)
    odd = summarise([Sample(100.0, host(), (gpu(sm_clock_mhz=1800.0, max_sm_clock_mhz=2100.0),))], 0)
    assert odd["clock_ratio"] == 0.857
