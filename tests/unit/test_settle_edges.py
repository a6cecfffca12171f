"""engine/trust/settle.py at each edge (issue 45's mutation gaps): which figure a verdict speaks of (its name, its
device, the latest), each status a settled verdict can take and its words, the reference a setting is judged
against, and the words for someone else on the GPU of a figure that is not a result. Expected words by hand."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status, Verdict
from rigcheck.engine.facts.settings import HostSettings, in_force
from rigcheck.engine.trust.cause import NOTHING, NOTHING_NEXT
from rigcheck.engine.trust.settle import figure_of, other_user, settle

QUIET = {"samples": 12, "gpu_name": "NVIDIA H200", "trust": "TRUSTED", "trust_reasons": [], "trust_outside": []}
SLOW_CLOCK = {"clock_ratio": 0.6, "throttle": ["power cap"]}
CLOCK_WORDS = "SM clock at 60% of max (power cap)"
CLOCK_NEXT = "`nvidia-smi -q -d PERFORMANCE,POWER,CLOCK`"
RIVAL = [{"pid": 825, "name": "python3", "gpu_memory": 874 * 2**20}]
RIVAL_REASON = "1 other process(es) on the GPU: python3 (pid 825, 874 MiB); next: `nvidia-smi` lists them"
DISTURBED = {"trust": "SUSPECT", "other_gpu_processes": RIVAL, "trust_reasons": [RIVAL_REASON]}
DISTURBED |= {"trust_outside": [RIVAL_REASON]}
RIVAL_CAUSE = "1 other process(es) on the GPU: python3 (pid 825)"


def figure(
    value: float = 600.0, name: str = "matmul bf16 4096", device: str = "cuda:0", **conditions: Any
) -> Measurement:
    params = {"dtype": "bf16", "bound": "compute", "broken": None}
    return Measurement("matmul", name, value, "TFLOP/s", 1.0, 20, device, params, QUIET | conditions)


def verdict(status: Status, device: str = "cuda:0", check: str = "best-bf16", **numbers: Any) -> Verdict:
    said = {"figure": "matmul bf16 4096"} | numbers
    return Verdict("matmul", check, status, "bf16 is 600 TFLOP/s", said, device=device)


def test_the_verdict_speaks_of_the_latest_figure_of_its_name_on_its_device() -> None:
    first, again = figure(100.0), figure(700.0)
    elsewhere = figure(50.0, device="cuda:1")
    assert figure_of(verdict(Status.PASS), [first, again, elsewhere]) is again
    assert figure_of(verdict(Status.PASS, device="cuda:1"), [first, again, elsewhere]) is elsewhere
    assert figure_of(verdict(Status.PASS, device=""), [first, again, elsewhere]) is elsewhere  # any device: latest
    assert figure_of(verdict(Status.PASS, device="cuda:2"), [first, again]) is None
    assert figure_of(verdict(Status.PASS, figure=""), [first]) is None
    bare = Verdict("matmul", "best-bf16", Status.FAIL, "x", None, device="cuda:0")  # type: ignore[arg-type]
    assert settle(bare, [first]) is bare


def test_a_figure_read_back_is_found_by_equal_words_not_the_same_object() -> None:
    """The child's verdict and the parent's figures come through separate JSON events: their names and devices are
    equal strings, never one object."""
    stored = json.loads(json.dumps({"figure": "matmul bf16 4096", "device": "cuda:0"}))
    read_back = verdict(Status.FAIL, device=stored["device"], figure=stored["figure"])
    first = figure(**SLOW_CLOCK)
    assert read_back.device is not first.device and read_back.numbers["figure"] is not first.name  # the point
    settled = settle(read_back, [first])
    assert settled.explanation == f"bf16 is 600 TFLOP/s: likely cause: {CLOCK_WORDS}; next: {CLOCK_NEXT}"


def test_a_fail_on_a_clean_figure_names_its_cause_and_next_step() -> None:
    settled = settle(verdict(Status.FAIL), [figure(**SLOW_CLOCK)])
    assert settled.status is Status.FAIL
    assert settled.explanation == f"bf16 is 600 TFLOP/s: likely cause: {CLOCK_WORDS}; next: {CLOCK_NEXT}"
    assert settled.numbers == {
        "figure": "matmul bf16 4096",
        "cause": CLOCK_WORDS,
        "next": CLOCK_NEXT,
        "cause_kind": "clocks",
    }


def test_a_warn_on_a_quiet_figure_says_nothing_was_found() -> None:
    settled = settle(verdict(Status.WARN), [figure()])
    assert settled.status is Status.WARN
    assert settled.explanation == f"bf16 is 600 TFLOP/s: likely cause: {NOTHING}; next: {NOTHING_NEXT}"
    assert settled.numbers["cause_kind"] == "nothing"


@pytest.mark.parametrize("status", [Status.WARN, Status.FAIL])
def test_a_warn_or_fail_on_a_disturbed_figure_is_inconclusive_in_words(status: Status) -> None:
    settled = settle(verdict(status), [figure(**DISTURBED)])
    assert settled.status is Status.INCONCLUSIVE
    assert settled.explanation == (
        f"bf16 is 600 TFLOP/s; could not be judged: {RIVAL_CAUSE}; next: stop pid 825 and run again"
    )
    assert settled.numbers == {
        "figure": "matmul bf16 4096",
        "cause": RIVAL_CAUSE,
        "next": "stop pid 825 and run again",
        "cause_kind": "outside",
        "would_be": status.value,
    }


def test_a_pass_on_a_disturbed_figure_stands_and_says_what_disturbed_it() -> None:
    settled = settle(verdict(Status.PASS), [figure(**DISTURBED)])
    assert settled.status is Status.PASS
    assert settled.explanation == f"bf16 is 600 TFLOP/s; its figure: {RIVAL_CAUSE}"
    assert settled.numbers["cause_kind"] == "outside" and "would_be" not in settled.numbers


def test_a_pass_whose_cause_is_the_hardware_is_left_as_it_was() -> None:
    plain = verdict(Status.PASS)
    assert settle(plain, [figure(**SLOW_CLOCK)]) == plain


@pytest.mark.parametrize("status", [Status.NOT_JUDGED, Status.SKIP, Status.INCONCLUSIVE])
def test_a_verdict_that_judged_nothing_is_never_made_inconclusive(status: Status) -> None:
    settled = settle(verdict(status), [figure(**DISTURBED)])
    assert settled.status is status
    if status is Status.NOT_JUDGED:
        assert settled.explanation == f"bf16 is 600 TFLOP/s; its figure: {RIVAL_CAUSE}"
    else:
        assert settled.explanation == "bf16 is 600 TFLOP/s" and "cause" not in settled.numbers
    clean = settle(verdict(Status.NOT_JUDGED), [figure(**SLOW_CLOCK)])
    assert clean.explanation == "bf16 is 600 TFLOP/s" and "cause" not in clean.numbers


BLOCKING = [s.as_dict() for s in in_force({"CUDA_LAUNCH_BLOCKING": "1"}, HostSettings(usable_cpus=16))]


@pytest.mark.parametrize(("reference", "status"), [(1000, Status.INCONCLUSIVE), (1000.0, Status.INCONCLUSIVE)])
def test_a_setting_is_the_cause_only_against_a_numeric_reference(reference: object, status: Status) -> None:
    slow = figure(600.0, settings=BLOCKING)
    settled = settle(verdict(Status.WARN, reference=reference, reference_cited="the H200's bf16"), [slow])
    assert settled.status is status and settled.numbers["cause_kind"] == "setting"
    assert settled.explanation.startswith("bf16 is 600 TFLOP/s; could not be judged: CUDA_LAUNCH_BLOCKING=1 is set")
    unread = settle(verdict(Status.WARN, reference="1000"), [slow])  # no number to be off from
    assert unread.status is Status.WARN and unread.numbers["cause_kind"] == "nothing"
    near = settle(verdict(Status.WARN, reference=610.0), [slow])  # at its rate: the setting changed nothing
    assert near.status is Status.WARN and near.numbers["cause_kind"] == "nothing"


BROKEN = "the device timer disagrees with the wall clock: the timer is broken"


def not_a_result(status: Status = Status.FAIL, check: str = "figure matmul bf16 4096") -> Verdict:
    return verdict(status, check=check)


def broken(**conditions: Any) -> Measurement:
    m = figure(4229.0, **conditions)
    return Measurement(m.stage, m.name, m.value, m.unit, 1.0, 20, m.device, m.params | {"broken": BROKEN}, m.conditions)


def test_a_figure_that_is_no_result_beside_another_process_is_inconclusive_in_words() -> None:
    settled = settle(not_a_result(), [broken(**DISTURBED)])
    cause = "other processes on cuda:0: python3 (pid 825)"
    assert settled.status is Status.INCONCLUSIVE
    assert settled.explanation == f"bf16 is 600 TFLOP/s; could not be judged: {cause}; next: stop it and run again"
    assert settled.numbers == {
        "figure": "matmul bf16 4096",
        "would_be": "FAIL",
        "cause_kind": "outside",
        "cause": cause,
    }
    warn, quiet = not_a_result(Status.WARN), not_a_result()
    assert settle(warn, [broken(**DISTURBED)]) is warn  # only a FAIL
    assert settle(quiet, [broken()]) is quiet


def test_only_a_check_named_figure_is_a_figure_that_is_no_result() -> None:
    named = settle(not_a_result(check="figurematmul"), [broken(**DISTURBED)])
    assert named.numbers["cause_kind"] == "broken" and named.explanation.endswith(
        f"could not be judged: {BROKEN}; next: run it again"
    )


@pytest.mark.parametrize(
    ("memory", "words"),
    [
        (2**30, "1,024 MiB"),
        (1.5 * 2**20, "2 MiB"),
        ("874 MiB", "874 MiB"),
        (None, "memory unknown"),
        (0, "0 MiB"),
        ("", "memory unknown"),
    ],
)
def test_someone_unseen_is_named_with_the_memory_held(memory: object, words: str) -> None:
    unseen = figure(unseen_user={"gpu_memory": memory, "worked": None, "evidence": ""})
    assert other_user(unseen) == f"another process that rigcheck cannot see used cuda:0 ({words})"


def test_an_unseen_holder_that_did_no_work_is_no_one_but_a_listed_process_still_is() -> None:
    idle = {"gpu_memory": 2**30, "worked": False, "evidence": "GPU idle before"}
    assert other_user(figure(unseen_user=idle)) is None
    worked = figure(unseen_user=idle | {"worked": True})
    assert other_user(worked) == "another process that rigcheck cannot see used cuda:0 (1,024 MiB)"
    assert other_user(figure(unseen_user="someone")) is None  # not a stored record
    four = [{"pid": 1, "name": "a"}, {"pid": 2}, {"name": "c"}, {"pid": 4, "name": "d"}]
    assert other_user(figure(unseen_user=idle, other_gpu_processes=four)) == (
        "other processes on cuda:0: a (pid 1), ? (pid 2), c (pid ?)"
    )


def test_a_reason_outside_the_hardware_is_the_other_user_of_last_resort() -> None:
    busy = "other processes kept 15.0 of 16 CPUs busy: stress (pid 4242)"
    cpu = figure(trust="SUSPECT", trust_reasons=["clock low", busy], trust_outside=[busy])
    assert other_user(cpu) == busy
    also = "other processes kept 3.0 of 4 CPUs busy"
    assert other_user(figure(trust="SUSPECT", trust_reasons=[busy, also], trust_outside=[busy, also])) == busy
    assert other_user(figure(trust="SUSPECT", trust_reasons=["clock low"], trust_outside=[])) is None
    settled = settle(not_a_result(), [broken(trust="SUSPECT", trust_reasons=[busy], trust_outside=[busy])])
    assert settled.explanation == f"bf16 is 600 TFLOP/s; could not be judged: {busy}; next: stop it and run again"
