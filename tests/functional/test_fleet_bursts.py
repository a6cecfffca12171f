"""An agent's events go to rank 0 in bursts, one slot and one state write each: rank 0 unpacks a burst into its
events in order, drops a forged or oversized one and counts it, no event is held past the window, and what is
held goes before the agent's end."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from fleet_memory import KEY, RUN, MemoryStore, channel
from rigcheck.engine.events import (
    LogLine,
    Progress,
    StageFinished,
    StageStarted,
    Status,
    Verdict,
    event_from_dict,
    event_to_dict,
)
from rigcheck.engine.fleet.channel import BURST_WINDOW_S, MAX_BURST_BYTES, MAX_BURST_EVENTS, Heartbeat
from rigcheck.engine.fleet.collector import Collector
from rigcheck.engine.fleet.seal import seal
from rigcheck.engine.store import Store

STREAM = Path(__file__).resolve().parents[2] / "bench" / "data" / "fleet_stream_cpu_quick.json"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def fleet_of(tmp_path: Path, **bursts: object):
    shared = MemoryStore()
    channels = [channel(shared, 0, 2), channel(shared, 1, 2, **bursts)]
    store = Store(tmp_path / "s.db")
    run_id = store.begin_fleet_run(["probe"], "quick", "python3", [], {"id": RUN})
    collector = Collector(store, run_id, channels[0], {"id": RUN}, 30.0, 30.0)
    for rank, name in enumerate("ab"):
        channels[rank].announce({"name": name, "devices": ["cpu"], "stages": ["probe"], "profile": "quick"})
    return shared, channels[1], store, run_id, collector


def logs(store: Store, run_id: int) -> list[str]:
    with sqlite3.connect(store.path) as db:
        rows = db.execute("SELECT payload FROM events WHERE run_id = ? AND kind = 'LogLine' AND host = 'b'", (run_id,))
        return [json.loads(payload)["text"] for (payload,) in rows]


def slots(shared: MemoryStore, rank: int = 1) -> list[list[str]]:
    """Each event slot's events, as their texts (or kinds), slot by slot."""
    out = []
    for n in range(1000):
        raw = shared.data.get(f"ev/{rank}/{n}")
        if raw is None:
            return out
        body = json.loads(json.loads(raw)["p"])
        out.append([e["event"].get("text", e["event"]["kind"]) for e in body["burst"]])
    return out


class Counting(MemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def set(self, key: str, value: str | bytes) -> None:
        self.writes += 1
        super().set(key, value)

    def compare_set(self, key: str, expected: str, desired: str) -> bytes:
        self.writes += 1
        return super().compare_set(key, expected, desired)


def test_a_burst_is_one_slot_and_one_state_write_and_rank_0_unpacks_it_in_order(tmp_path: Path) -> None:
    shared, agent, store, run_id, collector = fleet_of(tmp_path, window=60.0, timer=False)
    calls = shared.calls
    for text in ("one", "two", "three"):
        agent.publish(LogLine("probe", text))
    assert shared.calls == calls  # held: nothing written yet
    agent.flush()
    assert shared.calls - calls == 2  # one compare_set for the slot, one set for the state
    assert slots(shared) == [["one", "two", "three"]]
    agent.publish(LogLine("probe", "four"))
    agent.finish({"exit_code": 0})
    collector.poll()
    assert logs(store, run_id) == ["one", "two", "three", "four"]
    host = collector.hosts[1]
    assert (host.read, host.state, host.seq) == (4, "done", 4)
    assert not collector.dropped.get(1)  # every event's number followed the last: nothing counted lost


def _burst(events: list[dict], first: int = 0) -> dict:
    return {"burst": [{"seq": first + n, "event": e} for n, e in enumerate(events)]}


LINE = event_to_dict(LogLine("probe", "forged"))


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (seal(b"not the fleet key!" * 2, RUN, "ev/1/0", _burst([LINE, LINE])), "forged"),
        (seal(KEY, RUN, "ev/1/1", _burst([LINE, LINE])), "forged"),  # sealed for another slot: replayed
        (seal(KEY, RUN, "ev/1/0", _burst([LINE] * (MAX_BURST_EVENTS + 1))), "malformed"),
        (seal(KEY, RUN, "ev/1/0", {"burst": []}), "malformed"),
        (seal(KEY, RUN, "ev/1/0", {"burst": {"seq": 0, "event": LINE}}), "malformed"),
        (seal(KEY, RUN, "ev/1/0", {"burst": [], "seq": 0}), "malformed"),
        (
            seal(KEY, RUN, "ev/1/0", _burst([event_to_dict(LogLine("probe", "x" * 60_000))] * 20)),
            "malformed",
        ),  # 20 events each within bounds, 1.2 MB together: above MAX_BURST_BYTES
    ],
    ids=["another-key", "another-slot", "too-many", "empty", "not-a-list", "extra-key", "too-large"],
)  # named: each value holds the time it was made, and two xdist workers must collect the same tests
def test_a_forged_or_oversized_burst_is_dropped_whole_and_counted(tmp_path: Path, value: str, reason: str) -> None:
    shared, agent, store, run_id, collector = fleet_of(tmp_path)
    if "x" * 1000 in value:
        assert len(value) > MAX_BURST_BYTES and len(value) < 4 << 20  # the seal's own limit would pass it
    shared.set("ev/1/0", value)
    agent._slot = 1
    agent.publish(LogLine("probe", "real"))
    agent.finish({"exit_code": 0})
    collector.poll()
    collector.record_dropped()
    assert logs(store, run_id) == ["real"]
    assert getattr(collector.dropped[1], reason) == 1
    assert collector.hosts[1].state == "done"


def test_a_bad_event_inside_a_burst_is_counted_alone_and_the_rest_are_kept(tmp_path: Path) -> None:
    shared, agent, store, run_id, collector = fleet_of(tmp_path)
    bad = {**event_to_dict(Verdict("probe", "c", Status.PASS, "e")), "status": "NOPE"}
    worse = {**event_to_dict(Verdict("probe", "d", Status.PASS, "e")), "status": "NOPE"}  # the same complaint
    events = [event_to_dict(LogLine("probe", "a")), bad, event_to_dict(LogLine("probe", "b")), worse]
    shared.set("ev/1/0", seal(KEY, RUN, "ev/1/0", _burst(events)))
    agent._slot, agent._sent = 1, 4
    agent.publish(LogLine("probe", "c"))
    agent.finish({"exit_code": 0})
    collector.poll()
    assert logs(store, run_id) == ["a", "b", "c"]
    assert collector.dropped[1].malformed == 2  # each bad event once, though both fail alike


def test_an_event_is_held_no_longer_than_the_window_and_urgent_ones_go_at_once(tmp_path: Path) -> None:
    clock = Clock()
    shared, agent, *_ = fleet_of(tmp_path, window=0.25, timer=False, clock=clock)
    agent.publish(LogLine("probe", "first"))
    assert slots(shared) == [] and agent.due() == clock.now + 0.25
    clock.now += 0.2
    agent.flush_due()
    assert slots(shared) == []  # within its window
    clock.now += 0.05
    agent.flush_due()
    assert slots(shared) == [["first"]] and agent.due() is None
    agent.publish(LogLine("probe", "second"))
    clock.now += 0.3  # nobody kept the time: the next event finds the burst past its window and sends both
    agent.publish(LogLine("probe", "third"))
    assert slots(shared)[1] == ["second", "third"]
    agent.publish(StageStarted("probe", "cpu", 1, "python3"))
    agent.publish(Verdict("probe", "ok", Status.PASS, "fine"))
    assert len(slots(shared)) == 2  # held
    agent.publish(StageFinished("probe", Status.PASS))  # a stage's end goes at once, with its burst
    assert slots(shared)[2] == ["StageStarted", "Verdict", "StageFinished"]
    agent.publish(Verdict("probe", "bad", Status.FAIL, "slow"))
    agent.publish(LogLine("probe", "after"))
    agent.publish(Verdict("probe", "worse", Status.CRASH, "died"))
    assert slots(shared)[3:] == [["Verdict"], ["after", "Verdict"]]
    agent.publish(Verdict("probe", "meh", Status.WARN, "slowish"))  # a WARN waits for its burst
    assert len(slots(shared)) == 5
    agent.publish(Verdict("probe", "hung", Status.TIMEOUT, "no answer"))
    assert slots(shared)[5:] == [["Verdict", "Verdict"]]


def test_a_full_burst_goes_at_once_and_a_large_event_starts_the_next(tmp_path: Path) -> None:
    shared, agent, *_ = fleet_of(tmp_path, window=60.0, timer=False)
    for n in range(MAX_BURST_EVENTS + 1):
        agent.publish(LogLine("probe", str(n)))
    assert [len(s) for s in slots(shared)] == [MAX_BURST_EVENTS]
    agent.publish(LogLine("probe", "y" * 60_000))
    agent.publish(LogLine("probe", "z" * 60_000))
    agent.publish(LogLine("probe", "w" * 60_000))
    agent.publish(LogLine("probe", "v" * 60_000))
    agent.publish(LogLine("probe", "u" * 60_000))  # past BURST_BYTES with the four before it
    agent.flush()
    assert [len(s) for s in slots(shared)] == [MAX_BURST_EVENTS, 5, 1]
    assert all(len(raw) <= MAX_BURST_BYTES for raw in shared.data.values())


def test_the_timer_sends_a_held_burst_without_anything_else_happening(tmp_path: Path) -> None:
    shared, agent, *_ = fleet_of(tmp_path, window=0.2)
    agent.publish(LogLine("probe", "alone"))
    deadline = time.monotonic() + 30  # a busy machine may run the timer late; never holds it for good
    while not slots(shared):
        assert time.monotonic() < deadline, "the held event was never sent"
        time.sleep(0.02)
    assert slots(shared) == [["alone"]]
    agent.close()
    agent.publish(LogLine("probe", "after the close"))  # sent at once: no timer runs any more
    assert slots(shared)[1] == ["after the close"]


def test_what_is_held_goes_before_the_end_and_on_close(tmp_path: Path) -> None:
    shared, agent, store, run_id, collector = fleet_of(tmp_path, window=3600.0)
    agent.publish(LogLine("probe", "late one"))
    agent.publish(Progress("probe", 1, 2))
    agent.finish({"exit_code": 0})  # no timer fired in an hour: the end sends them first
    end = json.loads(json.loads(shared.data["done/1"])["p"])
    assert (end["slots"], end["sent"]) == (1, 2)
    collector.poll()
    assert logs(store, run_id) == ["late one"] and collector.hosts[1].state == "done"
    shared2, closing, *_ = fleet_of(tmp_path / "x", window=3600.0)
    closing.publish(LogLine("probe", "held at a close"))
    closing.close()
    assert slots(shared2) == [["held at a close"]]


def test_a_burst_written_lately_is_the_heartbeat() -> None:
    clock = Clock()
    shared = MemoryStore()
    agent = channel(shared, 1, 2, window=0.0, clock=clock)
    assert agent.beat_if_quiet(3.0) == 3.0 and agent._beats == 1  # never written: beats
    clock.now += 1.0
    agent.publish(LogLine("probe", "x"))  # writes the state: a beat
    clock.now += 2.0
    assert agent.beat_if_quiet(3.0) == pytest.approx(1.0) and agent._beats == 2  # not due for a second
    clock.now += 1.0
    assert agent.beat_if_quiet(3.0) == 3.0 and agent._beats == 3
    ticking = Heartbeat(channel(shared, 0, 2), interval=0.01).start()
    deadline = time.monotonic() + 30
    while json.loads(json.loads(shared.data.get("hb/0", b'{"p": "{\\"beat\\": 0}"}'))["p"])["beat"] < 3:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    ticking.stop()


def test_the_recorded_stream_in_bursts_is_a_third_of_the_store_writes() -> None:
    """The recorded agent's 65 events, at their recorded times: one slot and one state a burst, not an event."""
    data = json.loads(STREAM.read_text())["events"]
    writes = {}
    for window in (0.0, BURST_WINDOW_S):
        clock, shared = Clock(), Counting()
        agent = channel(shared, 1, 2, window=window, timer=False, clock=clock)
        begun = clock.now
        for item in data:
            clock.now = begun + float(item["dt"])
            agent.flush_due()  # as a timer would, at the latest when the next event comes
            event = event_from_dict({**item["event"], "t": time.time() + float(item["dt"])})
            agent.publish(event)
        agent.finish({"exit_code": 0})
        writes[window] = shared.writes
    print(writes)
    assert writes[BURST_WINDOW_S] * 2.5 <= writes[0.0]
