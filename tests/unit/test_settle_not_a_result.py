"""A figure that is not a result (its device timer and the wall clock disagree) FAILs on a quiet GPU, and is
INCONCLUSIVE when someone else worked on the GPU meanwhile: seen on the H200 with a rival in another PID
namespace (events 0.508 ms, wall clock 2.95 ms for a 1 GiB device copy, 2026-12-03)."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.trust.settle import settle

BROKEN = "the device timer disagrees with the wall clock (events 0.508 ms, wall clock 2.95 ms): the timer is broken"


def figure(**conditions: Any) -> Measurement:
    return Measurement(
        "bandwidth",
        "device copy 1 GiB",
        4229.0,
        "GB/s",
        device="cuda:0",
        params={"broken": BROKEN, "broken_next": "run the stage again alone on this GPU"},
        conditions={"trust": "BROKEN", "trust_reasons": [BROKEN], "samples": 5} | conditions,
    )


def broken_verdict() -> Verdict:
    return Verdict(
        "bandwidth",
        "figure device copy 1 GiB",
        Status.FAIL,
        f"device copy 1 GiB on cuda:0: {BROKEN}; the figure is not a result",
        {"value": 4229.0, "unit": "GB/s", "limit": 4800.0, "figure": "device copy 1 GiB"},
        device="cuda:0",
    )


def test_a_broken_figure_on_a_quiet_gpu_still_fails() -> None:
    assert settle(broken_verdict(), [figure()]).status is Status.FAIL


def test_a_broken_figure_beside_a_user_rigcheck_cannot_see_is_inconclusive() -> None:
    # the stored memory is in bytes (931,528,704 on the H200, 2026-12-03)
    seen = figure(unseen_user={"gpu_memory": 931_528_704, "worked": True, "evidence": "GPU busy 100% before"})
    settled = settle(broken_verdict(), [seen])
    assert settled.status is Status.INCONCLUSIVE
    assert "another process that rigcheck cannot see used cuda:0 (888 MiB)" in settled.explanation
    assert settled.numbers["would_be"] == "FAIL"


def test_an_unseen_user_with_no_evidence_either_way_is_still_someone_else() -> None:
    maybe = figure(unseen_user={"gpu_memory": "874 MiB", "worked": None, "evidence": ""})
    assert settle(broken_verdict(), [maybe]).status is Status.INCONCLUSIVE


def test_an_idle_holder_that_did_no_work_leaves_the_fail() -> None:
    idle = figure(unseen_user={"gpu_memory": "120.5 GiB", "worked": False, "evidence": "GPU idle before"})
    assert settle(broken_verdict(), [idle]).status is Status.FAIL


def test_a_listed_process_on_the_gpu_makes_it_inconclusive_naming_it() -> None:
    rival = figure(other_gpu_processes=[{"pid": 707, "name": "python3", "gpu_memory_mib": 874}])
    settled = settle(broken_verdict(), [rival])
    assert settled.status is Status.INCONCLUSIVE
    assert "python3 (pid 707)" in settled.explanation


def test_a_verdict_on_another_figure_is_left_alone() -> None:
    other = Measurement("bandwidth", "device copy 4 GiB", 4250.0, "GB/s", device="cuda:0")
    assert settle(broken_verdict(), [other]).status is Status.FAIL
