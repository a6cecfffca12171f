"""The history judgement's edges, each with values worked by hand: how many earlier runs make a median (3, and
more than 3), which runs the sentence names (five, then "and N more"), where a figure's own scatter ends (3 scaled
MADs: 3 x 1.4826 x MAD), a figure of nothing, a figure above its history (named with no cause: the words a
user reads), and figures as the parent receives them up the stage child's pipe (unpickled: their strings are
equal to the literals, not the same objects)."""

from __future__ import annotations

from multiprocessing import Pipe
from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.run.event_pipe import receive_event, send_event
from rigcheck.engine.trust.history import Past, history_verdict

SENTENCE = "cuda:0 host to device pinned 1 GiB"


def copy(value: float, trust: str = "TRUSTED", **params: Any) -> Measurement:
    given: dict[str, Any] = {"bound": "link", "pinned": True, "direction": "h2d", "gpu_uuid": "GPU-0"} | params
    name = "host to device " + ("pinned" if given["pinned"] else "pageable") + " 1 GiB"
    return Measurement("bandwidth", name, value, "GB/s", 0.01, 6, "cuda:0", given, {"trust": trust})


def train(value: float, batch: int = 256, stage: str = "training") -> Measurement:
    params = {"batch": batch, "channels": 64, "precision": "bf16", "gpu_uuid": "GPU-1", "bound": "compute"}
    trusted = {"trust": "TRUSTED"}
    return Measurement(stage, "train c64 b256 bf16", value, "samples/s", None, 20, "cuda:0", params, trusted)


def piped(m: Measurement) -> Measurement:
    """The figure as the runner gets it: sent up the stage child's pipe and unpickled."""
    child, parent = Pipe()
    send_event(child, m)
    got = receive_event(parent)
    assert isinstance(got, Measurement)
    return got


def steady(*run_ids: int, value: float = 100.0, unit: str = "GB/s") -> list[Past]:
    return [Past(r, value, unit) for r in run_ids]


def test_three_earlier_runs_make_a_median_and_four_or_more_do_too() -> None:
    assert history_verdict(copy(80.0), steady(7, 6), "bandwidth") is None  # two: no median yet
    for runs in ((7, 6, 5), (8, 7, 6, 5), (9, 8, 7, 6, 5)):
        found = history_verdict(copy(80.0), steady(*runs), "bandwidth")
        assert found is not None and found.status == Status.WARN, runs
        assert f"20% below its own clean median 100 (compared with run {runs[0]}, the latest of {len(runs)}" in (
            found.explanation
        )


def test_the_sentence_names_the_five_latest_runs_then_how_many_more() -> None:
    def named(*runs: int) -> str:
        found = history_verdict(copy(80.0), steady(*runs), "bandwidth")
        assert found is not None
        return found.explanation.split("; likely cause")[0]

    assert named(10, 9, 8, 7, 6) == (
        f"{SENTENCE} 80 GB/s: 20% below its own clean median 100 "
        "(compared with run 10, the latest of 5 earlier clean figure(s): run(s) 10, 9, 8, 7, 6)"
    )
    assert named(5, 10, 9, 8, 7, 6).endswith(
        "the latest of 6 earlier clean figure(s): run(s) 10, 9, 8, 7, 6 and 1 more)"
    )
    assert named(4, 5, 10, 9, 8, 7, 6).endswith(
        "the latest of 7 earlier clean figure(s): run(s) 10, 9, 8, 7, 6 and 2 more)"
    )


def test_what_it_was_judged_against_names_the_latest_run_not_the_oldest() -> None:
    found = history_verdict(copy(44.0), [Past(40, 55.0, "GB/s"), Past(41, 55.2, "GB/s"), Past(38, 55.4, "GB/s")], "b")
    assert found is not None and found.status == Status.WARN
    assert found.numbers["expectation"] == pytest.approx(55.2)
    assert found.numbers["expectation_source"] == "its own clean median over 3 earlier run(s), latest run 41"
    assert found.numbers["runs"] == [41, 40, 38] and found.numbers["drift"] == pytest.approx(-0.2029)  # 44/55.2 - 1


def test_a_drift_is_named_only_past_three_scaled_mads_of_its_own_runs() -> None:
    """Runs at 90, 100 and 110: median 100, MAD 10, so 3 x 1.4826 x 10 = 44.478 below it is still scatter."""
    scattered = [Past(3, 90.0, "GB/s"), Past(2, 100.0, "GB/s"), Past(1, 110.0, "GB/s")]
    assert history_verdict(copy(55.6), scattered, "bandwidth") is None  # 44.4 below: inside the scatter
    past = history_verdict(copy(55.5), scattered, "bandwidth")  # 44.5 below: past it
    assert past is not None and past.status == Status.WARN and past.tolerance == pytest.approx(0.1)
    assert history_verdict(copy(50.0), scattered, "bandwidth") is not None


def test_a_small_steady_figure_is_named_past_ten_percent() -> None:
    """Runs at 10, 10 and 10 GB/s scatter by nothing: 8.9 (11% below) is named, 9.1 (9%) is not."""
    found = history_verdict(copy(8.9), steady(3, 2, 1, value=10.0), "bandwidth")
    assert found is not None and found.status == Status.WARN
    assert found.explanation.startswith(f"{SENTENCE} 8.9 GB/s: 11% below its own clean median 10 ")
    assert history_verdict(copy(9.1), steady(3, 2, 1, value=10.0), "bandwidth") is None


def test_a_figure_of_nothing_or_a_broken_one_is_not_judged_against_its_history() -> None:
    assert history_verdict(copy(0.0), steady(7, 6, 5), "bandwidth") is None
    assert history_verdict(copy(-5.0), steady(7, 6, 5), "bandwidth") is None
    assert history_verdict(copy(50.0, broken=True), steady(7, 6, 5), "bandwidth") is None
    assert history_verdict(copy(50.0, launch_bound=True), steady(7, 6, 5), "bandwidth") is None
    assert history_verdict(copy(50.0, trust="BROKEN"), steady(7, 6, 5), "bandwidth") is None
    assert history_verdict(copy(50.0), steady(7, 6, 5), "bandwidth") is not None  # the same, whole and clean


def test_a_figure_above_its_history_is_named_with_no_cause() -> None:
    """A cause explains a figure that fell short; one above its own runs is named plainly."""
    found = history_verdict(copy(111.0), steady(7, 6, 5), "bandwidth")
    assert found is not None and found.status == Status.WARN and found.check == "history host to device pinned 1 GiB"
    assert found.explanation == (
        f"{SENTENCE} 111 GB/s: 11% above its own clean median 100 "
        "(compared with run 7, the latest of 3 earlier clean figure(s): run(s) 7, 6, 5)"
    )
    assert found.numbers == {"device": "cuda:0", "value": 111.0, "median": 100.0, "drift": 0.11, "runs": [7, 6, 5]}
    assert history_verdict(copy(109.0), steady(7, 6, 5), "bandwidth") is None


def test_a_pageable_copy_received_from_the_stage_child_is_not_judged() -> None:
    assert history_verdict(piped(copy(50.0, pinned=False)), steady(7, 6, 5), "bandwidth") is None
    assert history_verdict(piped(copy(50.0)), steady(7, 6, 5), "bandwidth") is not None  # pinned: judged


def test_a_small_batch_received_from_the_stage_child_is_host_bound() -> None:
    """Batch 256 against runs at 100: 11% above is no fault, 24% below is inside a 30% band, 31% below is not."""
    earlier = steady(4, 3, 2, unit="samples/s")
    assert history_verdict(piped(train(111.0)), earlier, "training") is None
    assert history_verdict(piped(train(76.0)), earlier, "training", band=0.3) is None
    past = history_verdict(piped(train(69.0)), earlier, "training", band=0.3)
    assert past is not None and past.status == Status.WARN and past.tolerance == pytest.approx(0.3)


def test_only_a_training_step_is_host_bound_by_its_batch() -> None:
    """A figure of another stage that records a batch (none does today) keeps 10% both ways."""
    earlier = steady(4, 3, 2, unit="samples/s")
    for stage in ("verify", "burn"):
        above = history_verdict(train(111.0, stage=stage), earlier, stage, band=0.3)
        assert above is not None and above.status == Status.WARN, stage
        assert "11% above its own clean median 100" in above.explanation
        below = history_verdict(train(89.0, stage=stage), earlier, stage, band=0.3)
        assert below is not None and below.tolerance == pytest.approx(0.1), stage
