"""The runner survives children that segfault, abort, hang, raise or exit, and reports each one right."""

from __future__ import annotations

import time

from rigcheck.engine.events import StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan, exit_code_for
from stage_infos import fake


def stage_verdicts(events, stage):  # type: ignore[no-untyped-def]
    return [e for e in events if isinstance(e, Verdict) and e.stage == stage]


def test_each_death_gets_its_own_verdict_and_later_stages_still_run(run_stages, store):  # type: ignore[no-untyped-def]
    infos = [
        fake("ok"),
        fake("segfault"),
        fake("abort"),
        fake("hang", timeout=3.0),
        fake("raises"),
        fake("exits"),
        fake("ok2", "ok"),
    ]
    run, events, run_id = run_stages(infos)
    status = run.stage_status
    assert status == {
        "ok": Status.PASS,
        "segfault": Status.CRASH,
        "abort": Status.CRASH,
        "hang": Status.TIMEOUT,
        "raises": Status.FAIL,
        "exits": Status.CRASH,
        "ok2": Status.PASS,
    }
    segv = stage_verdicts(events, "segfault")[-1]
    assert "SIGSEGV" in segv.explanation and segv.numbers["signal"] == "SIGSEGV"
    assert "initialising queue 7" in segv.explanation  # the last log lines are quoted
    abort = stage_verdicts(events, "abort")[-1]
    assert "SIGABRT" in abort.explanation and "hipMemcpy" in abort.explanation
    hang = stage_verdicts(events, "hang")[-1]
    assert "3 s limit" in hang.explanation
    assert "fake_stages.py" in hang.explanation  # faulthandler's stack of the hung child
    raised = stage_verdicts(events, "raises")[-1]
    assert raised.status == Status.FAIL
    assert "RuntimeError: HIP error: invalid device function" in raised.explanation
    assert "code 7" in stage_verdicts(events, "exits")[-1].explanation
    assert run.exit_code == 3

    report = store.report(run_id)
    stored = {row["name"]: row["status"] for row in report["stages"]}
    assert stored == {name: s.value for name, s in status.items()}
    assert report["run"]["status"] == "complete" and report["run"]["exit_code"] == 3
    assert [m["value"] for m in report["measurements"]] == [42.0, 42.0]


def test_exit_codes_follow_the_worst_verdict(run_stages):  # type: ignore[no-untyped-def]
    run, _, _ = run_stages([fake("ok"), fake("fails")])
    assert run.exit_code == 1
    run, _, _ = run_stages([fake("ok")])
    assert run.exit_code == 0
    assert exit_code_for([Status.PASS, Status.WARN, Status.SKIP]) == 0
    assert exit_code_for([Status.FAIL, Status.TIMEOUT]) == 3


def test_cancel_stops_the_running_stage_and_the_next_one_runs(store, tmp_path):  # type: ignore[no-untyped-def]
    events = []
    started = []
    stopped = []

    def listen(event):  # type: ignore[no-untyped-def]
        events.append(event)
        if isinstance(event, StageStarted):
            started.append(time.monotonic())
        if isinstance(event, StageFinished) and event.stage == "polite_wait":
            stopped.append(time.monotonic())

    plan = RunPlan(1, RunRequest((fake("polite_wait", timeout=60), fake("ok"))), tmp_path)
    run = Run(plan, [listen])
    run.start()
    deadline = time.monotonic() + 30
    while not started and time.monotonic() < deadline:
        time.sleep(0.02)
    run.cancel_stage()
    assert run.wait(30)
    finished = [e for e in events if isinstance(e, StageFinished)]
    assert [(e.stage, e.status) for e in finished] == [
        ("polite_wait", Status.SKIP),
        ("ok", Status.PASS),
    ]
    # the stage saw its cancel flag and ended by itself, within the grace period: a child the runner had to
    # kill ends by SIGKILL (a negative code)
    assert finished[0].exit_code == 0, finished[0]


def test_a_failing_listener_does_not_stop_the_run(tmp_path):  # type: ignore[no-untyped-def]
    def broken(event):  # type: ignore[no-untyped-def]
        raise BrokenPipeError("stdout went away")

    run = Run(RunPlan(1, RunRequest((fake("ok"), fake("ok2", "ok"))), tmp_path), [broken])
    run.start()
    assert run.wait(60)
    assert run.stage_status == {"ok": Status.PASS, "ok2": Status.PASS}
    assert run.listener_errors and "stdout went away" in run.listener_errors[0]


def test_cancel_run_skips_the_rest(tmp_path):  # type: ignore[no-untyped-def]
    events = []
    plan = RunPlan(1, RunRequest((fake("slow"), fake("ok"))), tmp_path)
    run = Run(plan, [events.append])
    run.start()
    time.sleep(1.0)
    run.cancel()
    assert run.wait(30)
    assert run.status == "cancelled"
    assert run.stage_status["ok"] == Status.SKIP
