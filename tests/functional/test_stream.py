"""A live run's events pushed to its viewers: in order across the backlog/stream seam, a stalled viewer
never slows the run, and a viewer whose engine dies ends cleanly from the store."""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from fakes import h200_samples
from rigcheck.engine.events import LogLine, RunFinished, StageStarted
from rigcheck.engine.run import stream as stream_module
from rigcheck.engine.run.childpath import PREFIX, sweep_stale
from rigcheck.engine.run.control import ControlServer, control_path, subscribe
from rigcheck.engine.run.detach import spawn
from rigcheck.engine.run.follow import RunFollower
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.stream import Broadcast
from rigcheck.engine.run.wire import encode_sample, parse_line
from rigcheck.engine.store import Store
from stage_infos import fake


class Owner:
    """What OwnedRun does for the stream, without a runner: store each event, then push it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.run_id = store.begin_run(["ok"], "cpu", "quick", sys.executable, ["test"])
        self.stream = Broadcast(store.path, self.run_id, ["a note"])
        self.control = ControlServer(
            control_path(store.path, self.run_id), lambda op: None, subscribe=self.stream.subscribe
        )

    def record(self, event: object, publish: bool = True) -> None:
        self.store.record(self.run_id, event)  # type: ignore[arg-type]
        if publish:
            self.stream.on_event(event)  # type: ignore[arg-type]

    def end(self) -> None:
        self.record(RunFinished(self.run_id, "complete", 0))
        self.control.close()
        self.stream.close()


def follow_in_thread(
    store: Store, run_id: int, follower: RunFollower | None = None
) -> tuple[RunFollower, list[object], threading.Thread]:
    follower = follower or RunFollower(store, run_id)
    seen: list[object] = []
    thread = threading.Thread(target=lambda: seen.extend(follower.follow()), daemon=True)
    thread.start()
    return follower, seen, thread


def wait_for(predicate, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.01)


def texts(events: list[object]) -> list[str]:
    return [e.text for e in events if isinstance(e, LogLine)]


def test_a_subscriber_gets_every_event_once_in_order_across_the_seam(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    owner = Owner(store)
    for n in range(50):
        owner.record(LogLine("ok", f"line {n}"))  # the backlog, stored before anyone follows
    follower = RunFollower(store, owner.run_id)
    read_backlog = follower._backlog

    def backlog():  # type: ignore[no-untyped-def]
        # the seam: stored after the hello, before the viewer reads the store, pushed only later
        for n in range(50, 60):
            owner.record(LogLine("ok", f"line {n}"), publish=False)
        yield from read_backlog()

    follower._backlog = backlog  # type: ignore[method-assign]
    follower, seen, thread = follow_in_thread(store, owner.run_id, follower)
    wait_for(lambda: follower.subscribed and len(seen) >= 60)
    owner.stream.on_event(LogLine("ok", "line 59"))  # now pushed: lines 50-59 come by the stream too
    wait_for(lambda: owner.stream.last_seq > follower.reader.last_id - 1)
    writer_done = threading.Event()

    def write() -> None:  # events keep coming while the viewer reads
        for n in range(60, 400):
            owner.record(LogLine("ok", f"line {n}"))
        writer_done.set()

    threading.Thread(target=write, daemon=True).start()
    wait_for(writer_done.is_set)
    owner.end()
    thread.join(30)
    assert not thread.is_alive()
    assert texts(seen) == [f"line {n}" for n in range(400)]  # no gap, no duplicate
    assert isinstance(seen[-1], RunFinished) and follower.ended == "complete" and not follower.gone
    assert follower.streamed >= 300  # most came by the stream, not from the store
    assert follower.notes == ["a note"]


def test_a_subscriber_that_joins_mid_stream_misses_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    owner = Owner(store)
    stop = threading.Event()
    count = [0]

    def write() -> None:
        while not stop.is_set() or count[0] < 200:
            owner.record(LogLine("ok", f"line {count[0]}"))
            count[0] += 1
            if count[0] % 20 == 0:
                time.sleep(0.001)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    followers = []
    for _ in range(3):  # several joins while the writer writes
        wait_for(lambda: count[0] > len(followers) * 100 + 50)
        followers.append(follow_in_thread(store, owner.run_id))
    wait_for(lambda: all(follower.subscribed for follower, _, _ in followers))
    stop.set()
    writer.join(30)
    owner.end()
    for follower, seen, thread in followers:
        thread.join(30)
        assert texts(seen) == [f"line {n}" for n in range(count[0])]
        assert follower.subscribed and follower.ended == "complete"


def test_a_newcomer_never_takes_what_is_owed_to_an_earlier_subscriber(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    owner = Owner(store)
    first, seen_first, thread_first = follow_in_thread(store, owner.run_id)
    wait_for(lambda: first.subscribed and owner.stream.subscribers == 1)
    owner.record(LogLine("ok", "line 0"))
    wait_for(lambda: texts(seen_first) == ["line 0"])
    owner.record(LogLine("ok", "line 1"), publish=False)  # stored, its push still to come
    second, seen_second, thread_second = follow_in_thread(store, owner.run_id)
    wait_for(lambda: second.subscribed and owner.stream.subscribers == 2)
    owner.record(LogLine("ok", "line 2"))
    owner.end()
    thread_first.join(30)
    thread_second.join(30)
    assert texts(seen_first) == texts(seen_second) == ["line 0", "line 1", "line 2"]


def test_a_stalled_subscriber_never_slows_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_module, "QUEUE_LINES", 200)
    store = Store(tmp_path / "s.db")
    owner = Owner(store)
    stalled, hello, _ = subscribe(control_path(store.path, owner.run_id))  # joins, then never reads again
    assert hello["ok"] is True
    follower, seen, thread = follow_in_thread(store, owner.run_id)  # a healthy one beside it
    wait_for(lambda: follower.subscribed and owner.stream.subscribers == 2)
    padding = "x" * 2000  # fills the stalled socket's buffers soon
    slowest = 0.0
    for n in range(2000):
        started = time.monotonic()
        owner.record(LogLine("ok", f"line {n} {padding}"))
        slowest = max(slowest, time.monotonic() - started)
        if n % 100 == 99:  # the healthy one reads on: on a busy machine its thread may lag, never by 200 lines
            wait_for(lambda least=n - 100: len(texts(seen)) > least, 60)
    assert owner.stream.dropped == 1  # the stalled one was let go, not waited for
    wait_for(lambda: owner.stream.subscribers == 1)
    started = time.monotonic()
    owner.end()
    # an end, or a write, that waited on the stalled one would take the send timeout (5 s) or forever
    assert time.monotonic() - started < 0.9 * stream_module.SEND_TIMEOUT_S
    assert slowest < 0.5 * stream_module.SEND_TIMEOUT_S
    thread.join(30)
    assert [t.split()[1] for t in texts(seen)] == [str(n) for n in range(2000)]  # the healthy one got it all
    stalled.close()


def test_a_viewer_whose_engine_is_killed_ends_from_the_store(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    run_id, engine = spawn(path, RunRequest((fake("ok"), fake("slow", timeout=120)), "cpu", "quick", telemetry=False))
    store = Store(path)
    follower, seen, thread = follow_in_thread(store, run_id)
    wait_for(lambda: follower.subscribed and any(isinstance(e, StageStarted) and e.stage == "slow" for e in seen), 60)
    os.kill(engine, signal.SIGKILL)
    thread.join(30)
    assert not thread.is_alive()
    assert follower.gone and follower.ended == "interrupted (its engine is gone)"
    assert store.run(run_id)["status"] == "interrupted"
    wait_for(lambda: not sweep_stale() and not list(Path(tempfile.gettempdir()).glob(f"{PREFIX}{engine}-*")), 30)


def test_samples_cross_the_wire_whole() -> None:
    for sample in h200_samples(3):
        item = parse_line(encode_sample(sample))
        assert item == sample


def test_the_hello_names_the_last_event_sent(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    owner = Owner(store)
    for n in range(5):
        owner.record(LogLine("ok", f"line {n}"))
    sock, hello, rest = subscribe(control_path(store.path, owner.run_id))
    with sock:
        stored = store._read("SELECT max(id) FROM events WHERE run_id = ?", (owner.run_id,))[0][0]
        assert hello["seq"] == stored and hello["notes"] == ["a note"] and rest == b""
        owner.record(LogLine("ok", "line 5"))
        sock.settimeout(10)
        line = sock.makefile("rb").readline()
    assert json.loads(line)["seq"] == stored + 1
    owner.end()


def test_an_engine_without_a_stream_is_followed_through_the_store(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["ok"], "cpu", "quick", sys.executable, ["test"])
    server = ControlServer(control_path(store.path, run_id), lambda op: None)  # cancel only, as before
    try:
        follower, seen, thread = follow_in_thread(store, run_id)
        store.record(run_id, LogLine("ok", "hello"))
        store.record(run_id, RunFinished(run_id, "complete", 0))
        thread.join(30)
    finally:
        server.close()
    assert texts(seen) == ["hello"] and follower.ended == "complete" and not follower.subscribed


def test_a_follower_asked_to_stop_stops_at_once(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    owner = Owner(store)
    follower, _seen, thread = follow_in_thread(store, owner.run_id)
    wait_for(lambda: follower.subscribed)
    started = time.monotonic()
    follower.stop.set()
    thread.join(5)
    assert not thread.is_alive() and time.monotonic() - started < 2.0  # it polls every 0.1-0.2 s; a busy host lags
    owner.end()
