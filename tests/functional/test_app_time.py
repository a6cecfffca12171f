"""Issue 34, items 9, 10 and 11 in the app: the stage's and the run's elapsed and expected time, a second app
that follows a run started after it opened, the toast after a cancel, and a first draw that does not wait
for torch."""

from __future__ import annotations

import os
import re
import stat
import sys
import time
from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from pilot_helpers import row, wait_until
from rigcheck.engine.events import StageFinished, StageStarted, Status
from rigcheck.engine.run import cancel
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.torch_question import MARK
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.app_follow import ended_words
from rigcheck.tui.run_link import RunLink
from rigcheck.tui.widgets.run_clock import clock_text, time_line
from screen_text import screen_text
from stage_infos import fake


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RIGCHECK_CONFIG", str(tmp_path / "settings.json"))


def words(app: RigcheckApp) -> str:
    return " ".join(screen_text(app).split())


def test_the_time_line_says_elapsed_against_expected_or_no_estimate() -> None:
    durations = {"probe": 10.0, "matmul": 150.0}
    line = time_line(1000.0, 780.0, ["probe", "matmul"], durations, "matmul", 928.0)
    assert line == "matmul 1m12s of ~2m30s · run 3m40s of ~2m40s"
    assert time_line(1000.0, 780.0, ["probe", "new"], durations, "new", 928.0) == "new 1m12s · run 3m40s (no estimate)"
    assert time_line(1000.0, 780.0, ["probe", "new"], durations, "probe", 995.0) == (
        "probe 5s of ~10s · run 3m40s (no estimate)"
    )
    assert time_line(1000.0, 940.0, ["probe"], durations) == "run 1m00s of ~10s"  # between two stages
    assert [clock_text(s) for s in (0, 59.9, 60, 3599, 3600, 7325)] == [
        "0s",
        "59s",
        "1m00s",
        "59m59s",
        "1h00m00s",
        "2h02m05s",
    ]


async def test_the_stages_panel_times_the_stage_and_the_run_while_it_goes_on(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    earlier = store.begin_run(["polite_wait"], "cpu", "quick", "python", [])
    store.record(earlier, StageStarted("polite_wait", "cpu", 1, "python", t=100.0))
    store.record(earlier, StageFinished("polite_wait", Status.PASS, 0, t=100.0 + 95.0))
    store.end_run(earlier, "complete", 0)
    app = RigcheckApp(
        store, FakeSampler(h200_samples()), stages=[fake("polite_wait"), fake("ok")], device="cpu", profile="quick"
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        assert "· run" not in words(app)  # idle: no time line
        await pilot.press("1")
        timed = re.compile(r"polite_wait (\d+)s of ~1m35s · run (\d+)s of ~1m35s")  # the run is that one stage
        await wait_until(pilot, lambda: timed.search(words(app)) is not None, 60)
        first = int(timed.search(words(app)).group(1))
        await wait_until(pilot, lambda: int(timed.search(words(app)).group(1)) > first, 30)  # it moves
        await pilot.press("c")
        await wait_until(pilot, lambda: not app.running)
        await wait_until(pilot, lambda: "· run" not in words(app), 10)  # gone with the run


async def test_after_a_cancel_the_toast_does_not_say_complete(tmp_path: Path) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), stages=[fake("polite_wait")], device="cpu")
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await pilot.press("1")
        await wait_until(pilot, lambda: row(app, "polite_wait")[2] == "running")
        await pilot.press("c")
        await wait_until(pilot, lambda: not app.running)
        await pilot.pause(0.2)
        said = [n.message for n in app._notifications]
    assert f"run {app.run_id} ended: polite_wait cancelled" in said, said
    assert not any(message.endswith("complete") for message in said), said
    assert ended_words(3, "complete", []) == "run 3 complete"
    assert ended_words(3, "cancelled", ["matmul"]) == "run 3 ended: matmul cancelled (run cancelled)"


async def test_an_open_app_follows_a_run_another_process_starts(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    stages = [fake("polite_wait"), fake("ok")]
    app = RigcheckApp(store, FakeSampler(h200_samples()), stages=stages, device="cpu", profile="quick")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)
        assert not app.running and "(idle)" in screen_text(app)
        request = RunRequest((stages[0],), "cpu", "quick", sys.executable, (), telemetry=False, argv=("other",))
        other = RunLink.start(Store(tmp_path / "s.db"), request)  # as a second app or `run --detach` would
        try:
            await wait_until(pilot, lambda: app.running and app.run_id == other.run_id, 60)
            await wait_until(pilot, lambda: row(app, "polite_wait")[2] == "running", 60)
            assert "(running)" in screen_text(app)
        finally:
            cancel.stop(store, other.run_id, 30)
        await wait_until(pilot, lambda: not app.running, 60)


FAKE_PYTHON = """#!/bin/sh
# answers the question about torch as a Python with two GPUs would, once told to go on
while [ ! -e "{go}" ]; do sleep 0.05; done
echo '{mark}{{"torch": "2.13.0", "build": "CUDA 12.8", "python": "3.11.7", "gpus": 2}}'
"""


async def test_the_app_draws_before_torch_answers_and_takes_the_answer_when_it_comes(tmp_path: Path) -> None:
    go = tmp_path / "go"
    python = tmp_path / "python"
    python.write_text(FAKE_PYTHON.format(go=go, mark=MARK))
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    app = RigcheckApp(
        Store(tmp_path / "s.db"), FakeSampler(h200_samples()), python=str(python), ask_gpus=True, profile="quick"
    )
    started = time.monotonic()
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await wait_until(pilot, lambda: "Stages: cuda:0, quick (asking torch)" in screen_text(app), 30)
        assert app.asking_gpus and time.monotonic() - started < 30  # drawn while torch has not answered
        await pilot.press("d")  # a device the user chooses is kept whatever torch says
        await pilot.pause(0.1)
        chosen = app.device
        os.close(os.open(go, os.O_CREAT | os.O_WRONLY))
        await wait_until(pilot, lambda: not app.asking_gpus, 30)
        assert app.gpus == ("cuda:0", "cuda:1") and app.device == chosen
    again = RigcheckApp(
        Store(tmp_path / "s.db"), FakeSampler(h200_samples()), python=str(python), ask_gpus=True, profile="quick"
    )
    async with again.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: not again.asking_gpus, 30)
        assert again.device == "all" and "Stages: all, quick (idle)" in screen_text(again)


@pytest.mark.needs("tmux")
@pytest.mark.parametrize("driver", ["none", "traces"])
def test_the_real_command_draws_before_it_asks_torch(tmp_path: Path, driver: str) -> None:
    """`rigcheck` with no --device in a terminal: its first screen is up while torch is still being asked
    (before, it drew nothing until a fresh Python had imported torch: 6 s on a busy 2-core host). Where no GPU
    driver left a trace, it knows the CPU without asking; where one did ("traces": the check is told so, as on a
    host whose torch still sees no GPU), the "asking torch" screen comes first, then torch's answer. Both are
    asserted on every host, a GPU-less CI machine included."""
    import subprocess

    from tmux_screen import wait_for

    session = f"rigcheck-ask-{os.getpid()}-{driver}"
    surely = "True" if driver == "none" else "False"
    start = (
        f"import rigcheck.engine.hw.gpu_nodes as g; g.surely_no_gpu = lambda *a, **k: {surely}; import runpy; "
        "runpy.run_module('rigcheck.tui.cli', run_name='__main__', alter_sys=True)"
    )
    command = (
        f"RIGCHECK_STORE={tmp_path / 's.db'} RIGCHECK_CONFIG={tmp_path / 'settings.json'} TEXTUAL_ANIMATIONS=none "
        f'{sys.executable} -c "{start}" --profile quick'
    )
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", command], check=True)
    try:
        first = wait_for(session, lambda text: "Stages" in text, 90)
        if driver == "none":  # no GPU driver here: the app knows it is the CPU without asking torch at all
            assert "Stages: cpu, quick (idle)" in first, first
            return
        assert "quick (asking torch)" in first, first  # drawn first; the answer comes after
        answered = wait_for(session, lambda text: "quick (idle)" in text, 120)
        assert "Stages: cpu, quick (idle)" in answered  # this host's torch sees no GPU
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
