"""engine/trust/unseen.py at each edge, on plain conditions (issue 45's mutation gaps): the GPU idle or busy
before the figure (2 samples, 50% busy, 5% idle), a pid sampled at work (1% SM) and whether it counts beside
unlisted memory (256 MiB), a visible process that holds memory but did no work (it cannot hide an unseen one
that did), sizes in MiB and GiB, and a short figure's clocks taken from its span. Expected words and numbers
are worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.trust.unseen import examine, idle_before_state, idle_holders, span_clock_fields, unseen_user

MIB, GIB = 2**20, 2**30
NEXT = "; next: `nvidia-smi` on the host (outside this container) names it: stop it or use another GPU"
SEEN = "another process that rigcheck cannot see (another container or PID namespace)"


def before(utilization: float, top: float | None = None, samples: int = 3, age_s: float = 4.0, **more: Any) -> dict:
    top = utilization if top is None else top
    idle = {"samples": samples, "age_s": age_s, "utilization_pct": utilization, "utilization_max_pct": top}
    return {"gpu_idle_before": idle | {"power_w": 640.0} | more}


@pytest.mark.parametrize(
    ("idle", "state"),
    [
        (before(100.0, samples=1), "unknown"),  # one sample is not enough
        (before(100.0, samples=2), "busy"),
        (before(50.0), "busy"),
        (before(49.9), "unknown"),  # neither busy nor idle
        (before(0.0, top=5.0), "idle"),
        (before(0.0, top=5.1), "unknown"),
        ({}, "unknown"),
    ],
)
def test_the_gpu_before_the_figure_is_busy_from_half_and_idle_up_to_5_percent(idle: dict, state: str) -> None:
    assert idle_before_state(idle) == state


def test_a_gpu_busy_before_the_figure_is_a_reason_in_words() -> None:
    found = examine(before(73.4, age_s=3.6), {}, "cuda:1")
    assert found.reasons == [
        f"{SEEN} is using cuda:1: GPU busy 73%, 640 W while rigcheck had no work on it, 4 s before this figure{NEXT}"
    ]
    assert found.stored["unseen_user"] == {
        "gpu_memory": 0,
        "worked": True,
        "evidence": "GPU busy 73%, 640 W while rigcheck had no work on it, 4 s before this figure",
    }
    no_power = before(80.0)
    no_power["gpu_idle_before"]["power_w"] = None
    assert examine(no_power, {}, "cuda:0").stored["unseen_user"]["evidence"] == (
        "GPU busy 80% while rigcheck had no work on it, 4 s before this figure"
    )
    assert examine(before(80.0, samples=1), {}, "cuda:0").reasons == []  # one sample: not judged


WORKER = {"pid": 9999, "gpu_memory": 0, "sm_pct": 1.0, "listed": False}


@pytest.mark.parametrize(("sm_pct", "worked"), [(1.0, True), (0.9, None)])
def test_a_pid_sampled_at_work_counts_from_1_percent(sm_pct: float, worked: bool | None) -> None:
    conditions = {"gpu_unlisted_memory": 300 * MIB, "gpu_unseen_processes": [WORKER | {"sm_pct": sm_pct}]}
    user = unseen_user(conditions)
    assert user is not None and user["worked"] is worked and user["gpu_memory"] == 300 * MIB
    if worked:
        assert user["evidence"] == "SM use 1% (pid 9999)"


def test_the_highest_sampled_use_is_named_with_the_first_such_pid() -> None:
    procs = [
        {"pid": 11, "gpu_memory": GIB, "sm_pct": 30.0},
        {"pid": 12, "gpu_memory": 2 * GIB, "sm_pct": 90.0},
        {"pid": 13, "gpu_memory": GIB, "sm_pct": 0.5},
    ]
    user = unseen_user({"gpu_unseen_processes": procs, "gpu_unlisted_memory": 100 * MIB})
    assert user == {"gpu_memory": 4 * GIB, "worked": True, "evidence": "SM use 90% (pid 11)"}
    found = examine({"gpu_unseen_processes": procs, "gpu_unlisted_memory": 100 * MIB}, {}, "cuda:0")
    assert found.reasons == [f"{SEEN} is using cuda:0: 4.0 GiB, SM use 90% (pid 11){NEXT}"]


@pytest.mark.parametrize(("unlisted", "counted"), [(256 * MIB - 1, False), (256 * MIB, True)])
def test_a_pid_in_no_list_counts_only_beside_unlisted_memory(unlisted: int, counted: bool) -> None:
    conditions = {"gpu_unlisted_memory": unlisted, "gpu_unseen_processes": [WORKER | {"sm_pct": 100.0}]}
    user = unseen_user(conditions)
    if counted:
        assert user == {"gpu_memory": unlisted, "worked": True, "evidence": "SM use 100% (pid 9999)"}
    else:
        assert user is None  # likely a listed process numbered outside this namespace
    listed = {"gpu_unlisted_memory": unlisted, "gpu_unseen_processes": [{"pid": 5, "gpu_memory": 3 * MIB}]}
    assert unseen_user(listed) is not None  # one the driver lists counts whatever the unlisted memory


def test_a_blind_list_makes_unlisted_memory_no_evidence() -> None:
    assert unseen_user({"gpu_list_blind": True, "gpu_unlisted_memory": 10 * GIB}) is None
    assert unseen_user({"gpu_list_blind": False, "gpu_unlisted_memory": 10 * GIB}) == {
        "gpu_memory": 10 * GIB,
        "worked": None,
        "evidence": "no per-process use and no idle moment before the figure",
    }


def test_a_visible_process_that_did_no_work_cannot_hide_an_unseen_one_that_did() -> None:
    """Issue 45 (unseen.py near line 78): busy before the figure, and the only visible process held memory but was
    sampled at 0% SM: someone unseen worked, and the figure is not trusted."""
    holder = {"pid": 5151, "name": "holder", "gpu_memory": 120 * GIB}
    conditions = before(100.0) | {
        "other_gpu_processes": [holder],
        "gpu_others_sm": [{"pid": 5151, "sm_pct": 0.0, "reads": 5}],
    }
    found = examine(conditions, {}, "cuda:0")
    assert found.reasons == [
        f"{SEEN} is using cuda:0: GPU busy 100%, 640 W while rigcheck had no work on it, 4 s before this figure{NEXT}"
    ]
    assert found.notes == [
        "holder (pid 5151) holds 120.0 GiB on cuda:0 but did no work (SM use 0% in 5 per-process sample(s) of this "
        "figure's window); it may start at any moment"
    ]
    # one visible process that worked (or whose use was never read) is the one named for the busy GPU instead
    for use in ({"pid": 5151, "sm_pct": 1.0, "reads": 5}, {"pid": 5151, "sm_pct": 0.0, "reads": 0}):
        assert unseen_user(conditions | {"gpu_others_sm": [use]}) is None


def test_a_listed_pid_sampled_idle_holds_memory_but_did_no_work() -> None:
    conditions = {
        "gpu_unlisted_memory": 255 * MIB,
        "gpu_unseen_processes": [{"pid": 5151, "gpu_memory": 120 * GIB, "sm_pct": None, "listed": True}],
        "gpu_others_sm": [{"pid": 5151, "sm_pct": 0.9, "reads": 7}],
    }
    found = examine(conditions, {}, "cuda:2")
    assert found.reasons == []
    assert found.notes == [f"{SEEN} holds 120.0 GiB on cuda:2 but did no work (SM use 0% in 7 per-process sample(s))"]
    at_work = conditions | {"gpu_others_sm": [{"pid": 5151, "sm_pct": 1.0, "reads": 7}]}
    assert unseen_user(at_work)["worked"] is None  # read at work: no evidence it was idle
    unread = conditions | {"gpu_others_sm": [{"pid": 5151, "sm_pct": 0.0, "reads": 0}]}
    assert unseen_user(unread)["worked"] is None
    beside = conditions | {"gpu_unlisted_memory": 256 * MIB}  # unlisted memory of someone else beside it
    assert unseen_user(beside)["worked"] is None


def test_two_listed_pids_sampled_idle_are_counted_by_the_first_one_s_reads() -> None:
    procs = [{"pid": 21, "gpu_memory": GIB}, {"pid": 22, "gpu_memory": GIB}]
    sm = [{"pid": 22, "sm_pct": 0.0, "reads": 9}, {"pid": 21, "sm_pct": 0.0, "reads": 4}]
    user = unseen_user({"gpu_unseen_processes": procs, "gpu_others_sm": sm})
    assert user == {"gpu_memory": 2 * GIB, "worked": False, "evidence": "SM use 0% in 4 per-process sample(s)"}
    one_worked = [sm[0] | {"sm_pct": 2.0}, sm[1]]  # (read at work by the driver, though not sampled in the list)
    assert unseen_user({"gpu_unseen_processes": procs, "gpu_others_sm": one_worked})["worked"] is None


def test_a_gpu_idle_before_says_an_unseen_holder_did_no_work() -> None:
    conditions = before(0.0, top=4.0, age_s=12.4) | {"gpu_unlisted_memory": 874 * MIB}
    found = examine(conditions, {}, "cuda:0")
    assert found.reasons == []
    assert found.notes == [
        f"{SEEN} holds 874 MiB on cuda:0 but did no work (GPU idle (4%) while rigcheck had no work on it, 12 s before)"
    ]


def test_whether_it_worked_could_not_be_told_is_a_reason_without_memory_when_none_is_held() -> None:
    found = examine({"gpu_unlisted_memory": 2 * GIB + GIB // 2}, {}, "cuda:0")
    assert found.reasons == [
        f"{SEEN} is using cuda:0: 2.5 GiB, whether it worked could not be told (no per-process use and no idle "
        f"moment before the figure){NEXT}"
    ]


@pytest.mark.parametrize(("held", "words"), [(GIB, "1.0 GiB"), (GIB - MIB, "1023 MiB"), (512 * MIB, "512 MiB")])
def test_sizes_are_in_gib_from_1_gib(held: int, words: str) -> None:
    conditions = before(0.0) | {"gpu_unlisted_memory": held}
    assert f"holds {words} on cuda:0 but did no work" in examine(conditions, {}, "cuda:0").notes[0]


def test_idle_holders_by_the_gpu_idle_before_and_not_the_unseen_ones() -> None:
    procs = [{"pid": 1, "name": "a", "gpu_memory": 0}, {"pid": 2, "name": "b", "gpu_memory": 64 * MIB}]
    conditions = before(0.0) | {"other_gpu_processes": procs, "gpu_unseen_processes": [{"pid": 1, "gpu_memory": 0}]}
    holders = idle_holders(conditions)
    assert holders == [procs[1] | {"evidence": "GPU idle while rigcheck had no work on it, before this figure"}]
    found = examine(conditions, {}, "cuda:0")
    assert found.notes[-1] == (
        "b (pid 2) holds 64 MiB on cuda:0 but did no work (GPU idle while rigcheck had no work on it, before this "
        "figure); it may start at any moment"
    )
    assert found.view["other_gpu_processes"] == [] and found.view["other_gpu_pids"] == []
    none_held = examine(before(0.0) | {"other_gpu_processes": [{"pid": 3, "name": "c"}]}, {}, "cuda:0")
    assert none_held.notes == [
        "c (pid 3) holds memory on cuda:0 but did no work (GPU idle while rigcheck had no work on it, before this "
        "figure); it may start at any moment"
    ]
    assert idle_holders(before(49.0) | {"other_gpu_processes": procs}) == []  # not idle: no evidence


def test_only_idle_holders_and_unseen_pids_leave_the_judged_process_list() -> None:
    worker, holder = {"pid": 7, "name": "w"}, {"pid": 8, "name": "h"}
    sm = [{"pid": 7, "sm_pct": 40.0, "reads": 3}, {"pid": 8, "sm_pct": 0.0, "reads": 3}]
    found = examine({"other_gpu_processes": [worker, holder], "gpu_others_sm": sm}, {}, "cuda:0")
    assert found.view["other_gpu_processes"] == [worker] and found.view["other_gpu_pids"] == [7]
    assert found.stored == {
        "gpu_idle_holders": [holder | {"evidence": "SM use 0% in 3 per-process sample(s) of this figure's window"}]
    }
    untouched = examine({"other_gpu_processes": [worker], "gpu_others_sm": sm[:1]}, {}, "cuda:0")
    assert untouched.view == {"other_gpu_processes": [worker], "gpu_others_sm": sm[:1]}


def test_a_list_blind_driver_is_a_note() -> None:
    found = examine({"gpu_list_blind": True}, {}, "cuda:3")
    assert found.notes == [
        "NVML lists none of rigcheck's own processes on cuda:3 (the driver hides this PID namespace, as in many "
        "containers): another container's use of the GPU could not be told from rigcheck's own"
    ]
    assert found.reasons == [] and examine({"gpu_list_blind": False}, {}, "cuda:3").notes == []


PROBE = {"samples": 3, "age_s": 2.0, "utilization_pct": 90.0, "utilization_max_pct": 95.0, "power_w": 600.0}


@pytest.mark.parametrize(("sampled_age", "taken"), [(2.1, True), (2.0, False), (None, True)])
def test_the_child_probe_is_taken_where_fresher_than_the_sampler(sampled_age: float | None, taken: bool) -> None:
    conditions = {} if sampled_age is None else before(0.0, age_s=sampled_age)
    found = examine(conditions, {"span_clocks": {"idle_probe": PROBE}}, "cuda:0")
    if taken:
        assert found.stored["gpu_idle_before"] == PROBE | {"source": "stage child"}
        assert found.view["gpu_idle_before"] == PROBE | {"source": "stage child"}
        assert found.stored["unseen_user"]["worked"] is True
    else:
        assert "gpu_idle_before" not in found.stored and found.reasons == []
    assert examine({}, {"span_clocks": "not a dict"}, "cuda:0").stored == {}


SPAN = {
    "sm_mhz": [1800, None, 1500],
    "max_sm_mhz": 1980,
    "mem_mhz": [2600, 2500],
    "max_mem_mhz": 2619,
    "power_w": [650.0, None, 600.26],
    "reasons": ["sw power cap", "idle", "hw slowdown", "sw power cap"],
}


def test_a_short_figure_clocks_are_its_span_readings() -> None:
    fields = span_clock_fields(SPAN, {})
    assert fields == {
        "clocks_from": "span",
        "sm_clock_mean_mhz": 1650.0,
        "sm_clock_min_mhz": 1500,
        "clock_ratio": 0.833,  # 1650 / 1980
        "mem_clock_mean_mhz": 2550.0,
        "mem_clock_ratio": 0.974,  # 2550 / 2619 = 0.97365
        "power_mean_w": 625.1,  # 625.13
        "throttle": ["hw slowdown", "sw power cap"],
        "idle_share": 0.0,
    }
    odd = span_clock_fields({"sm_mhz": [1001, 1002], "mem_mhz": [1001, 1002]}, {"sm_clock_max_mhz": 3000})
    assert odd["sm_clock_mean_mhz"] == 1001.5 and odd["clock_ratio"] == 0.334  # the conditions' top, 0.3338
    assert odd["mem_clock_mean_mhz"] == 1001.5 and odd["mem_clock_ratio"] is None  # no top memory clock
    assert span_clock_fields({"sm_mhz": [1000]}, {})["clock_ratio"] is None
    assert span_clock_fields({}, {}) == {"clocks_from": "span", "throttle": [], "idle_share": 0.0}


def test_a_widened_figure_takes_its_span_and_a_launch_bound_one_drops_its_busy_share() -> None:
    conditions = {"widened": True, "utilization_mean_pct": 40.0, "clock_ratio": 0.5}
    found = examine(conditions, {"span_clocks": {"sm_mhz": [1980], "max_sm_mhz": 1980}}, "cuda:0")
    assert found.view["clock_ratio"] == 1.0 and found.view["widened"] is False
    assert found.view["utilization_mean_pct"] == 40.0 and found.stored["clocks_from"] == "span"
    bound = examine(conditions, {"launch_bound": True, "span_clocks": {"sm_mhz": [1980], "max_sm_mhz": 1980}}, "cuda:0")
    assert bound.view["utilization_mean_pct"] is None
    not_widened = examine(conditions | {"widened": False}, {"span_clocks": {"sm_mhz": [1980]}}, "cuda:0")
    assert not_widened.view["clock_ratio"] == 0.5 and "clocks_from" not in not_widened.stored
