"""One warm child per device runs stage after stage; a crash in it is still its stage's CRASH, and the next
stage starts in a fresh child with nothing left over from the last."""

from __future__ import annotations

import os
import sys
from dataclasses import replace
from pathlib import Path

from cli_calls import assert_one_line_error, rigcheck
from rigcheck.engine.events import Event, StageStarted, Status, Verdict
from rigcheck.engine.registry import STAGES, StageInfo
from rigcheck.engine.run.no_child import skip_reason
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan
from stage_infos import fake


def run_to_end(
    infos: list[StageInfo], tmp_path: Path, cold: bool = False, device: str = "cpu"
) -> tuple[Run, list[Event]]:
    events: list[Event] = []
    request = RunRequest(tuple(infos), device, "quick", sys.executable, cold=cold)
    run = Run(RunPlan(1, request, tmp_path / "logs"), [events.append])
    run.start()
    assert run.wait(240), "run did not finish"
    return run, events


def with_torch(info: StageInfo) -> StageInfo:
    """A test stage sent as real stages are: with the fingerprint, so torch is imported before it runs."""
    return replace(info, fingerprint=True)


def pids(events: list[Event]) -> dict[str, int]:
    return {e.stage: e.pid for e in events if isinstance(e, StageStarted)}


def verdict(events: list[Event], stage: str) -> Verdict:
    return [e for e in events if isinstance(e, Verdict) and e.stage == stage][-1]


def test_one_warm_child_runs_every_stage_and_cold_starts_one_each(tmp_path: Path) -> None:
    infos = [fake("one", "ok"), fake("two", "ok"), fake("three", "ok")]
    warm_run, warm = run_to_end(infos, tmp_path / "warm")
    cold_run, cold = run_to_end(infos, tmp_path / "cold", cold=True)
    assert set(warm_run.stage_status.values()) == {Status.PASS} == set(cold_run.stage_status.values())
    assert len(set(pids(warm).values())) == 1 and warm_run.warm.started == 1
    assert len(set(pids(cold).values())) == 3 and cold_run.warm.started == 0
    for stage in ("one", "two", "three"):  # each stage's output still lands in its own log
        assert f"stage='{stage}'" in (tmp_path / "warm" / "logs" / f"{stage}.log").read_text()


def test_a_crash_in_the_warm_child_is_its_stage_crash_and_the_next_stage_runs_fresh(tmp_path: Path) -> None:
    infos = [fake("before", "ok"), fake("segfault"), fake("after", "ok"), fake("hang", timeout=3.0), fake("last", "ok")]
    run, events = run_to_end(infos, tmp_path)
    assert run.stage_status == {
        "before": Status.PASS,
        "segfault": Status.CRASH,
        "after": Status.PASS,
        "hang": Status.TIMEOUT,
        "last": Status.PASS,
    }
    crash = verdict(events, "segfault")
    assert crash.numbers["signal"] == "SIGSEGV" and "initialising queue 7" in crash.explanation
    started = pids(events)
    assert started["segfault"] == started["before"]  # it crashed in the warm child...
    assert started["after"] != started["segfault"]  # ...and the next stage got a fresh one
    assert started["hang"] == started["after"] and started["last"] != started["hang"]
    assert run.warm.started == 3
    assert run.exit_code == 3


def test_what_a_stage_leaves_changed_is_put_back_before_the_next(tmp_path: Path) -> None:
    _run, events = run_to_end(
        [with_torch(fake("fresh", "state")), with_torch(fake("dirty")), with_torch(fake("after", "state"))], tmp_path
    )
    fresh, after = verdict(events, "fresh").numbers, verdict(events, "after").numbers
    assert fresh["pid"] == after["pid"]  # one process, so only putting things back explains the equality
    assert {k: v for k, v in after.items() if k != "pid"} == {k: v for k, v in fresh.items() if k != "pid"}
    assert fresh["left_env"] is None and fresh["left_path"] is False
    assert "put back what the stage left changed" in (tmp_path / "logs" / "dirty.log").read_text()


def test_a_cancelled_stage_throws_its_warm_child_away(tmp_path: Path) -> None:
    events: list[Event] = []
    infos = [fake("waits", "polite_wait"), fake("after", "ok")]
    run = Run(RunPlan(1, RunRequest(tuple(infos), "cpu", "quick"), tmp_path / "logs"), [events.append])

    def cancel_once_waiting(event: Event) -> None:
        if isinstance(event, StageStarted) and event.stage == "waits":
            run.cancel_stage()

    run.listeners.append(cancel_once_waiting)
    run.start()
    assert run.wait(120)
    assert run.stage_status["waits"] == Status.SKIP and run.stage_status["after"] == Status.PASS
    started = pids(events)
    assert started["after"] != started["waits"]


def test_the_parent_skips_links_on_one_gpu_named_without_a_child(tmp_path: Path) -> None:
    links = STAGES["links"]
    one = RunRequest((links,), "cuda:3", gpus=("cuda:3",))
    assert skip_reason(links, one) == "one GPU (cuda:3): nothing to link; use --device all on a host with two or more"
    assert skip_reason(links, RunRequest((links,), "all", gpus=("cuda:0", "cuda:1"))) is None
    assert skip_reason(links, RunRequest((links,), "cuda:0,cuda:1", gpus=("cuda:0", "cuda:1"))) is None
    assert skip_reason(links, RunRequest((links,), "cpu")) is None  # what torch sees decides: the child's
    assert skip_reason(STAGES["matmul"], one) is None
    run, events = run_to_end([links], tmp_path, device="cuda:3")
    assert run.stage_status == {"links": Status.SKIP}
    assert not pids(events) and run.warm.started == 0
    assert "nothing to link" in verdict(events, "links").explanation


def test_a_stage_that_pins_itself_to_one_cpu_is_undone_before_the_next(tmp_path: Path) -> None:
    _, events = run_to_end([with_torch(fake("pins", "pins_itself")), with_torch(fake("free", "where"))], tmp_path)
    free = verdict(events, "free").numbers
    assert free["pid"] == verdict(events, "pins").numbers["pid"]  # one warm child: only undoing explains it
    assert free["cpus"] == sorted(os.sched_getaffinity(0)) and free["threads"] == torch_threads()


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def test_a_stage_that_asks_for_a_fresh_child_gets_one_between_warm_ones(tmp_path: Path) -> None:
    infos = [fake("before", "ok"), replace(fake("fresh", "ok"), fresh_child=True), fake("after", "ok")]
    run, events = run_to_end(infos, tmp_path)
    started = pids(events)
    assert set(run.stage_status.values()) == {Status.PASS}
    assert started["before"] == started["after"] != started["fresh"]  # the warm child waited beside it
    assert run.warm.started == 1
    assert STAGES["training"].fresh_child and not STAGES["matmul"].fresh_child


def test_the_early_child_answers_the_preflight_and_the_run_adopts_it(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from rigcheck.engine.run import preflight, warm_pool
    from rigcheck.engine.run.options import request_from_args
    from rigcheck.tui.cli_parser import build_parser

    def no_second_interpreter(*args: object, **kwargs: object) -> None:
        raise AssertionError("the preflight started an interpreter of its own")

    monkeypatch.setattr(preflight.subprocess, "run", no_second_interpreter)
    args = build_parser().parse_args(["run", "probe", "--store", str(tmp_path / "s.db")])
    request, _ = request_from_args(args, early_child=True)
    assert request.device in ("cpu", "cuda:0")  # what the early child's torch sees, here a CPU build
    child = warm_pool.adopt_parked(sys.executable)
    assert child is not None and child.alive()
    assert child.close() == 0 and warm_pool.adopt_parked(sys.executable) is None


def test_an_interpreter_without_torch_is_still_one_line_from_a_fresh_preflight(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "python3"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexec " + sys.executable + ' -I -S "$@"\n')  # no site-packages: no torch
    fake.chmod(0o755)
    done = rigcheck("run", "probe", "--python", str(fake), store=tmp_path / "s.db", timeout=300)
    assert_one_line_error(done, "not a Python with torch", "ModuleNotFoundError")


def _fresh(name: str, function: str = "ok") -> StageInfo:
    return replace(with_torch(fake(name, function)), fresh_child=True)


def test_a_fresh_stage_child_is_started_ahead_during_a_stage_without_figures_and_used_once(tmp_path: Path) -> None:
    """It imports torch while `naps` (no throughput) runs, waits idle through `figures` (throughput: the runner
    first waits for its imports to end), runs its one stage, and leaves."""
    import psutil

    born: dict[str, float] = {}
    stamps: dict[str, float] = {}

    def note(event: Event) -> None:
        if isinstance(event, StageStarted):
            stamps[event.stage] = event.t
            born[event.stage] = psutil.Process(event.pid).create_time()

    infos = [fake("naps", "nap"), replace(fake("figures", "ok"), throughput=True), _fresh("fresh"), fake("after", "ok")]
    events: list[Event] = []
    run = Run(RunPlan(1, RunRequest(tuple(infos), "cpu", "quick", sys.executable), tmp_path / "logs"), [events.append])
    run.listeners.append(note)
    run.start()
    assert run.wait(240)
    assert set(run.stage_status.values()) == {Status.PASS}
    started = pids(events)
    assert run.warm.started_ahead == 1 and run.warm.started == 1
    assert started["fresh"] not in (started["naps"], started["after"])
    assert born["fresh"] < stamps["figures"]  # started before the stage ahead of it, not when its own came
    assert not psutil.pid_exists(started["fresh"]) or psutil.Process(started["fresh"]).status() == "zombie"


def test_a_crash_in_a_child_started_ahead_is_its_stage_crash_and_the_next_stage_runs(tmp_path: Path) -> None:
    infos = [fake("before", "ok"), _fresh("segfault", "segfault"), fake("after", "ok")]
    run, events = run_to_end(infos, tmp_path)
    assert run.stage_status == {"before": Status.PASS, "segfault": Status.CRASH, "after": Status.PASS}
    assert run.warm.started_ahead == 1
    crash = verdict(events, "segfault")
    assert crash.numbers["signal"] == "SIGSEGV" and "initialising queue 7" in crash.explanation
    assert pids(events)["segfault"] != pids(events)["before"]


def test_a_child_started_ahead_that_dies_while_it_waits_is_replaced_by_a_fresh_one(tmp_path: Path) -> None:
    import signal

    infos = [fake("before", "nap"), _fresh("fresh"), fake("after", "ok")]
    events: list[Event] = []
    killed: list[int] = []
    run = Run(RunPlan(1, RunRequest(tuple(infos), "cpu", "quick", sys.executable), tmp_path / "logs"), [events.append])

    def kill_the_waiting_one(event: Event) -> None:
        if isinstance(event, Verdict) and event.stage == "before":  # nap's end: the ahead child exists by now
            for child in run.warm._ahead.values():
                os.kill(child.proc.pid, signal.SIGKILL)
                child.proc.wait(60)  # dead before its stage comes: a death as the order goes is that stage's CRASH
                killed.append(child.proc.pid)

    run.listeners.append(kill_the_waiting_one)
    run.start()
    assert run.wait(240)
    assert killed and run.stage_status == {"before": Status.PASS, "fresh": Status.PASS, "after": Status.PASS}
    assert pids(events)["fresh"] not in killed
