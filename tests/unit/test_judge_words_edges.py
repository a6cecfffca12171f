"""judge()'s own rules and words at their edges: the CPU pools (rigcheck's set, else the host's, and a cgroup quota),
the three busiest named and what they leave, a steady burner, more threads than the quota, a rival's memory in MiB
under a GiB, an impossible figure, and the notes (a CPU limit, a setting, a launch-bound call, a widened window)."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.events import Measurement
from rigcheck.engine.trust.conditions import _size, cpu_pools, judge, rest_words

QUIET = {"samples": 9, "window_s": 4.0, "host_cpus": 16, "host_others_cpus": 0.0}


def cpu_figure(threads: int = 16, **params: Any) -> Measurement:
    p = {"bound": "host", "threads": threads, "spread_rel": 0.01} | params
    return Measurement("matmul", "cpu matmul fp32 512", 900.0, "GFLOP/s", None, 10, "cpu", p)


def procs(*cpus: float) -> list[dict[str, Any]]:
    return [{"pid": 100 + k, "name": f"p{k}", "cpus": c} for k, c in enumerate(cpus)]


def test_the_pools_are_the_set_else_the_host_and_a_quota_beside_either() -> None:
    assert cpu_pools({"host_cpus": 16, "host_others_cpus": 2.0}) == [(2.0, 16, "kept 2.0 of 16 CPUs busy", True)]
    narrowed = {"host_cpus": 16, "host_others_cpus": 9.0, "cpu_set_size": 2, "cpu_set_others_cpus": 0.0}
    assert cpu_pools(narrowed) == [(0.0, 2, "kept 0.0 of rigcheck's 2 CPUs busy", True)]  # a quiet set: not 9.0
    quota = {"host_cpus": 16, "host_others_cpus": 1.0, "cpu_quota": 2.5, "cpu_quota_others_cpus": 0.0}
    assert cpu_pools(quota)[1] == (0.0, 2.5, "in rigcheck's cgroup used 0.0 of its CPU quota of 2.5", False)
    assert cpu_pools({"host_cpus": 16}) == [] and cpu_pools({"cpu_quota": 2.5}) == []
    unsized = {"host_cpus": 16, "host_others_cpus": 2.0, "cpu_set_others_cpus": 0.0}  # a set's load, no set size
    assert cpu_pools(unsized) == [(2.0, 16, "kept 2.0 of 16 CPUs busy", True)]


def test_the_host_s_busiest_three_are_named_with_what_they_leave() -> None:
    conditions = QUIET | {"host_others_cpus": 10.0, "host_top_others": procs(4.0, 3.0, 2.0, 0.5)}
    (reason,) = judge(conditions, cpu_figure()).reasons
    assert reason == (
        "other processes kept 10.0 of 16 CPUs busy while this figure needed 16: p0 (pid 100, 4.0 CPUs), "
        "p1 (pid 101, 3.0 CPUs), p2 (pid 102, 2.0 CPUs), the rest 1.0 CPUs; next: stop them, or rerun with "
        "`--wait-quiet`"
    )
    exact = QUIET | {"host_others_cpus": 9.0, "host_top_others": procs(4.0, 3.0, 2.0)}
    assert (
        judge(exact, cpu_figure())
        .reasons[0]
        .endswith("p2 (pid 102, 2.0 CPUs); next: stop them, or rerun with `--wait-quiet`")
    )


def test_the_rest_is_said_from_a_twentieth_of_a_cpu() -> None:
    assert rest_words(1.0, [0.5, 0.45]) == ", the rest 0.1 CPUs"  # 0.05 left, as floats have it
    assert rest_words(1.0, [0.5, 0.46]) == ""
    assert rest_words(1.0, [0.5, 0.5]) == ""
    assert rest_words(0.05, []) == ", the rest 0.1 CPUs"  # exactly a twentieth


def test_a_named_process_without_an_amount_is_named_alone() -> None:
    conditions = QUIET | {"host_others_cpus": 10.0, "host_top_others": [{"pid": 7, "name": "x", "cpus": None}]}
    assert ": x (pid 7), the rest 10.0 CPUs; next:" in judge(conditions, cpu_figure()).reasons[0]


def test_a_set_s_reason_never_adds_the_host_s_rest() -> None:
    conditions = QUIET | {"cpu_set_size": 4, "cpu_set_others_cpus": 3.0, "host_top_others": procs(1.0)}
    (reason,) = judge(conditions, cpu_figure(4)).reasons
    assert reason.startswith("other processes kept 3.0 of rigcheck's 4 CPUs busy while this figure needed 4: ")
    assert "the rest" not in reason


def test_a_steady_burner_counts_under_the_floor_and_a_passing_one_does_not() -> None:
    """On 16 CPUs a 16-thread figure's floor is 0.8 of a CPU; a process busy in every sample counts from 0.4."""
    top = procs(0.45)
    steady = QUIET | {"host_others_cpus": 0.45, "host_top_others": top, "host_steady_others": top}
    assert judge(steady, cpu_figure()).trust == "SUSPECT"
    passing = QUIET | {"host_others_cpus": 0.45, "host_top_others": top}
    assert judge(passing, cpu_figure()).trust == "TRUSTED"
    weak = QUIET | {"host_others_cpus": 0.45, "host_top_others": top, "host_steady_others": procs(0.39)}
    assert judge(weak, cpu_figure()).trust == "TRUSTED"
    unnamed = QUIET | {"host_others_cpus": 0.45, "host_steady_others": [{"pid": 1, "name": "x", "cpus": None}]}
    assert judge(unnamed, cpu_figure()).trust == "TRUSTED"


@pytest.mark.parametrize(("threads", "label"), [(3, "SUSPECT"), (2, "TRUSTED")])
def test_more_threads_than_the_quota_set_its_pace(threads: int, label: str) -> None:
    conditions = QUIET | {"cpu_quota": 2.5, "cpu_quota_others_cpus": 0.0}
    judged = judge(conditions, cpu_figure(threads))
    assert judged.trust == label
    if label == "SUSPECT":
        assert judged.reasons[0].startswith("this figure's 3 threads share a cgroup CPU quota of 2.5 CPUs")
        assert judged.outside == judged.reasons  # a quota is outside the hardware measured


def test_a_quota_shared_with_others_is_their_load_not_a_named_process() -> None:
    conditions = QUIET | {"cpu_quota": 2.0, "cpu_quota_others_cpus": 1.5, "host_top_others": procs(1.5)}
    (reason,) = judge(conditions, cpu_figure(2)).reasons
    assert reason == (
        "other processes in rigcheck's cgroup used 1.5 of its CPU quota of 2 while this figure needed 2; next: "
        "stop them, or rerun with `--wait-quiet`"
    )


def test_a_rival_s_memory_is_in_mib_under_a_gib_and_three_are_named() -> None:
    assert (_size(2**30 - 2**20), _size(2**30), _size(3 * 2**29)) == ("1023 MiB", "1.0 GiB", "1.5 GiB")
    rivals = [{"pid": k, "name": f"r{k}", "gpu_memory": 512 * 2**20} for k in range(1, 5)]
    judged = judge({"samples": 9, "other_gpu_processes": rivals}, cpu_figure(1))
    assert judged.reasons[0].startswith("4 other process(es) on the GPU: r1 (pid 1, 512 MiB), r2 (pid 2, 512 MiB), ")
    assert "r3 (pid 3, 512 MiB); next:" in judged.reasons[0] and "r4" not in judged.reasons[0]
    assert judged.outside == judged.reasons


def test_an_impossible_figure_is_broken_and_one_within_its_margin_is_not() -> None:
    over = cpu_figure(1, limit=100.0, limit_basis="1 CPU x 1,000 MHz")
    judged = judge(QUIET, over)
    assert judged.trust == "BROKEN" and "9x the limit of 100 (1 CPU x 1,000 MHz)" in judged.reasons[0]
    assert judge(QUIET, cpu_figure(1, limit=900.0)).trust == "TRUSTED"
    assert judge(QUIET, cpu_figure(1, broken="timers disagree")).reasons == ["timers disagree"]


def test_the_notes_a_figure_carries() -> None:
    settings = [{"name": "OMP_NUM_THREADS", "value": "1", "effect": "one thread per process"}]
    conditions = QUIET | {"cpu_limit": "2 CPUs (affinity)", "settings": settings, "widened": True}
    params = {"launch_bound": True, "median_s": 12e-6}
    judged = judge(conditions, cpu_figure(1, **params))
    assert judged.trust == "TRUSTED"
    assert judged.notes == [
        "2 CPUs (affinity)",
        "shorter than the telemetry's sampling: clocks not judged (its window held earlier work)",
        "OMP_NUM_THREADS=1 is set: one thread per process",
        "launch-bound: one call takes 12.0 us, near the host's launch overhead",
    ]


def test_a_suspect_figure_that_also_spread_says_so_in_a_note() -> None:
    conditions = QUIET | {"host_others_cpus": 10.0}
    judged = judge(conditions, cpu_figure(spread_rel=0.2))
    assert judged.trust == "SUSPECT" and judged.notes == ["timing spread 20% of the median"]
    assert judge(QUIET, cpu_figure(spread_rel=0.2)).reasons == ["timing spread 20% of the median"]


def test_a_held_clock_is_not_outside_the_hardware_but_a_neighbour_is() -> None:
    conditions = QUIET | {"host_others_cpus": 10.0, "throttle": ["hardware slowdown"], "clock_ratio": 0.99}
    judged = judge(conditions | {"samples": 9}, cpu_figure())
    assert judged.trust == "SUSPECT" and len(judged.reasons) == 2
    assert judged.outside == [judged.reasons[0]] and judged.reasons[1].startswith("clocks held back by hardware")
