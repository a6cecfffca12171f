"""The app gets a run's events pushed by its engine, on a follower thread: no store poll on the app's thread,
the live panels draw on the engine's own samples, and leaving the app stops the thread at once."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fakes import FakeSampler, h200_samples
from pilot_helpers import row, wait_until
from rigcheck.engine.run.follow import Follower
from rigcheck.engine.store import Store
from rigcheck.tui.app import RigcheckApp
from rigcheck.tui.messages import RunProgress
from stage_infos import fake


@pytest.fixture(autouse=True)
def private_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "settings.json"
    monkeypatch.setenv("RIGCHECK_CONFIG", str(path))
    return path


async def test_events_arrive_pushed_and_the_store_is_never_read_on_the_apps_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[str] = []
    rows = Follower.rows

    def counted(self: Follower) -> list[tuple[int, str]]:
        reads.append(threading.current_thread().name)
        return rows(self)

    monkeypatch.setattr(Follower, "rows", counted)
    store = Store(tmp_path / "s.db")
    app = RigcheckApp(store, FakeSampler(h200_samples()), stages=[fake("ok"), fake("nap")], device="cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        ui_thread = threading.current_thread().name
        await pilot.press("a")
        await wait_until(pilot, lambda: app.link is not None)  # the key reaches the app when a busy host runs it
        link = app.link
        assert link is not None
        await wait_until(pilot, lambda: not app.running and row(app, "nap")[2] == "done")
        assert row(app, "ok")[4] == "PASS" and row(app, "nap")[4] == "PASS"
        assert link.follower.subscribed and link.follower.streamed > 0  # pushed by the engine
        await pilot.pause(1.0)  # an idle app reads nothing either
        timers = [str(getattr(t, "_callback", "")) for t in app._timers]
        assert any("refresh_live" in t for t in timers) and not any("follow" in t for t in timers)
    assert reads, "the follower reads its backlog from the store"
    assert ui_thread not in reads and set(reads) <= {"rigcheck-follow"}


async def test_the_live_panels_draw_on_the_engines_samples_during_a_run(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    own = FakeSampler(h200_samples())  # an H200 the app's own sampler would show; the engine sees this CPU host
    app = RigcheckApp(store, own, stages=[fake("slow", "polite_wait", timeout=120)], device="cpu")
    async with app.run_test(size=(120, 40)) as pilot:
        assert app.telemetry is own
        await pilot.press("1")
        await wait_until(pilot, lambda: app.link is not None and app.link.telemetry.latest() is not None)
        assert app.telemetry is app.link.telemetry  # the samples the figures' trust labels are made from
        engine_sample = app.link.telemetry.latest()
        assert engine_sample is not None and engine_sample.gpus == ()  # the engine's, not the fake H200's
        await pilot.press("c")
        await wait_until(pilot, lambda: not app.running)
        assert app.telemetry is own  # no run live: the app's own sampler again


async def test_leaving_the_app_stops_its_follower_at_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    app = RigcheckApp(
        store, FakeSampler(h200_samples()), stages=[fake("slow", "polite_wait", timeout=120)], device="cpu"
    )
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        await wait_until(pilot, lambda: row(app, "slow")[2] == "running")
        link = app.link
        assert link is not None and link._thread is not None and link._thread.is_alive()
        link.close()  # as on_unmount does
        assert not link._thread.is_alive()  # close() waits at most a second for it: it ended within that
        app.link = link  # the app still holds the run: stop it on the way out
        app.stop_run()
    assert store.run(app.run_id)["status"] == "cancelled"


def test_progress_of_one_stage_is_coalesced_and_others_are_not() -> None:
    from rigcheck.engine.events import Progress

    first = RunProgress(1, Progress("matmul", 1, 10, "a"))
    assert first.can_replace(RunProgress(1, Progress("matmul", 2, 10, "b")))
    assert not first.can_replace(RunProgress(1, Progress("burn", 2, 10, "b")))
    assert not first.can_replace(RunProgress(1, Progress("matmul", 2, 10, "b", device="cuda:1")))
    assert not first.can_replace(RunProgress(2, Progress("matmul", 2, 10, "b")))
