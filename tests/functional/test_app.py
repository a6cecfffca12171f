"""The real app driven with Pilot: Probe by key, a crashing stage, themes, quitting during a run, history."""

from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest
from fakes import FakeSampler, h200_samples
from pilot_helpers import row, wait_until
from rigcheck.engine.registry import STAGES
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.screens.confirm_quit import ConfirmQuit
from rigcheck.tui.screens.history import HistoryScreen, compare_rows
from stage_infos import fake


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "settings.json"
    monkeypatch.setenv("RIGCHECK_CONFIG", str(path))
    return path


async def test_probe_by_key_shows_its_verdict_and_facts(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    app = RigcheckApp(store, FakeSampler(h200_samples()), stages=[STAGES["probe"]], device="cpu", profile="quick")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        await wait_until(pilot, lambda: row(app, "probe")[2] == "done" and not app.running)
        assert row(app, "probe")[4] == "PASS"
        device_text = str(app.query_one("#device-text").render())
        assert "torch 2." in device_text and "CPU " in device_text and "fingerprint" in device_text


async def test_a_crashing_stage_leaves_the_app_running(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    app = RigcheckApp(store, FakeSampler(h200_samples()), stages=[fake("segfault"), fake("ok")], device="cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        await wait_until(pilot, lambda: row(app, "segfault")[2] == "done" and not app.running)
        assert row(app, "segfault")[4] == "CRASH"
        log_text = "\n".join(app.query_one("#log").texts)
        assert "SIGSEGV" in log_text and "initialising queue 7" in log_text
        await pilot.press("2")  # the next stage can start
        await wait_until(pilot, lambda: row(app, "ok")[2] == "done")
        assert row(app, "ok")[4] == "PASS"
        bench = app.query_one("#bench")
        assert bench.row_count == 1 and "answer" in str(bench.get_row_at(0)[0])


async def test_theme_switch_is_remembered(tmp_path: Path, private_settings: Path) -> None:
    store = Store(tmp_path / "s.db")
    app = RigcheckApp(store, FakeSampler(h200_samples()), device="cpu")
    async with app.run_test() as pilot:
        assert app.theme == "rigcheck-dark"
        app.theme = "rigcheck-contrast"
        await pilot.pause()
        assert app.get_css_variables()["verdict-fail"] == "#ff0000"
    assert json.loads(private_settings.read_text())["theme"] == "rigcheck-contrast"
    again = RigcheckApp(store, FakeSampler(h200_samples()), device="cpu")
    async with again.run_test():
        assert again.theme == "rigcheck-contrast"


async def test_quitting_during_a_run_asks_then_stops_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    app = RigcheckApp(
        store, FakeSampler(h200_samples()), stages=[fake("ok"), fake("slow", "polite_wait", timeout=120)], device="cpu"
    )
    async with app.run_test() as pilot:
        await pilot.press("a")
        await wait_until(pilot, lambda: row(app, "slow")[2] == "running")
        child = next(s["pid"] for s in store.report(app.run_id)["stages"] if s["name"] == "slow")
        await pilot.press("ctrl+q")
        await pilot.pause(0.1)
        assert isinstance(app.screen, ConfirmQuit)
        await pilot.press("n")
        await pilot.pause(0.1)
        assert app.running and psutil.pid_exists(child)
        await pilot.press("ctrl+q")
        await pilot.pause(0.1)
        await pilot.press("s")
        await pilot.pause(0.2)
    assert app.return_value == 130
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
    report = store.report(store.latest_run_id())
    assert report["run"]["status"] == "cancelled"
    assert {s["name"]: s["status"] for s in report["stages"]} == {"ok": "PASS", "slow": "SKIP"}
    assert any(v["stage"] == "slow" and "cancelled" in v["explanation"] for v in report["verdicts"])
    assert [m["name"] for m in report["measurements"]] == ["answer"]  # nothing measured is lost


async def test_quit_leaving_the_run_then_a_new_app_reattaches_to_it(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    stages = [fake("ok"), fake("slow", "polite_wait", timeout=120)]
    app = RigcheckApp(store, FakeSampler(h200_samples()), stages=stages, device="cpu")
    async with app.run_test() as pilot:
        await pilot.press("a")
        await wait_until(pilot, lambda: row(app, "slow")[2] == "running")
        run_id = app.run_id
        await pilot.press("ctrl+q")
        await pilot.pause(0.1)
        await pilot.press("enter")  # the default: leave it running
        await pilot.pause(0.2)
    assert app.return_value == 0 and app.left_running == run_id
    run = store.run(run_id)
    assert run["status"] == "running" and store.is_live(run)  # the engine carries on without the app

    again = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), stages=stages, device="cpu")
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: again.run_id == run_id and row(again, "slow")[2] == "running")
        assert row(again, "ok")[4] == "PASS"  # the earlier events, read back from the store
        assert again.query_one("#bench").row_count == 1
        await pilot.press("c")  # and the live run answers the new app's cancel
        await wait_until(pilot, lambda: not again.running)
        assert row(again, "slow")[2] == "cancelled" or row(again, "slow")[4] in ("SKIP", "cancelled")
    assert store.run(run_id)["status"] == "complete"  # only the stage was cancelled; the run ran to its end


async def test_contended_host_is_unmistakable(tmp_path: Path) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples(others=12.0)), device="cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        host = app.query_one("#host")
        assert host.has_class("contended") and "CONTENDED" in str(host.border_title)
    quiet = RigcheckApp(Store(tmp_path / "s2.db"), FakeSampler(h200_samples(others=0.3)), device="cpu")
    async with quiet.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        assert not quiet.query_one("#host").has_class("contended")


async def test_history_opens_and_compares_runs(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    # the engine samples no telemetry here, so neither figure can be TRUSTED on a busy test host
    app = RigcheckApp(store, FakeSampler(h200_samples()), stages=[fake("ok")], device="cpu", engine_telemetry=False)
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(2):
            await pilot.press("1")
            await wait_until(pilot, lambda: not app.running and row(app, "ok")[2] == "done")
            await pilot.pause(0.2)
        await pilot.press("h")
        await pilot.pause(0.2)
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("space", "down", "space", "c")
        await pilot.pause(0.2)
        table = app.screen.query_one("#compare-table")
        ratio = str(table.get_row_at(0)[5])
        said = " ".join(app.screen.query_one("#compare-why").plain.split())
    first, second = store.report(1), store.report(2)
    # a figure without telemetry is not TRUSTED, so there is no ratio, and the line below says why
    labels = [(r["measurements"][0]["conditions"] or {}).get("trust", "no telemetry") for r in (first, second)]
    assert table.row_count == 1 and ratio == "-" and f"no ratio: run 1 {labels[0]}, run 2 {labels[1]}" in said
    assert compare_rows(first, second)[0][0] == "answer [cpu]"


async def test_every_action_is_in_the_command_palette(tmp_path: Path) -> None:
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(h200_samples()), device="cpu")
    async with app.run_test():
        titles = [command.title for command in app.get_system_commands(app.screen)]
    for wanted in ("Run stage probe", "Run all stages", "Cancel the running stage", "Next device", "History"):
        assert wanted in titles


async def test_an_unchanged_history_is_not_plotted_again(tmp_path: Path) -> None:
    from textual_plotext import PlotextPlot

    samples = h200_samples()
    app = RigcheckApp(Store(tmp_path / "s.db"), FakeSampler(samples), device="cuda:0")
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.3)
        plot = app.query_one(PlotextPlot)
        calls = []
        plot.refresh = lambda *a, **k: calls.append(1)  # type: ignore[method-assign]
        panel = app.query_one("#clocks")
        for _ in range(5):
            panel.redraw(samples, [])
        assert calls == []  # the same samples: nothing to draw again
        panel.redraw([*samples, *h200_samples(count=4)[-1:]], [])


HOLDER = """
import sys
from rigcheck.engine.store import Store
store = Store(sys.argv[1])
run_id = store.begin_run(["ok"], "cpu", "quick", sys.executable, ["engine"])
print(run_id, flush=True)
sys.stdin.readline()
store.end_run(run_id, "error", 4, "the store could not be written (database or disk is full); the run was stopped")
"""


async def test_a_run_that_ends_in_error_says_why_in_the_app(tmp_path: Path) -> None:
    import subprocess
    import sys

    store = Store(tmp_path / "s.db")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(store.path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    run_id = int(holder.stdout.readline())
    app = RigcheckApp(store, FakeSampler(h200_samples()), stages=[fake("ok")], device="cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.run_id == run_id and app.running  # opened on the live run
        holder.stdin.write("end\n")
        holder.stdin.flush()
        await wait_until(pilot, lambda: not app.running, 20)
        log_text = "\n".join(app.query_one("#log").texts)
    holder.wait(10)
    assert f"run {run_id} ended in error: the store could not be written (database or disk is full)" in log_text
