"""Issue 35.7: deleting an agent's keys needs no fleet key, and silenced a healthy host that the report then
blamed ("nodeB is lost"). A host that goes silent after its keys vanished, or its counters went back, is
reported as "the fleet store was tampered with" and counted as tampering; one that just stops is still lost."""

from __future__ import annotations

import time
from pathlib import Path

from fleet_memory import RUN, MemoryStore, channel
from rigcheck.engine.events import LogLine, StageStarted
from rigcheck.engine.fleet.collector import Collector
from rigcheck.engine.store import Store

HOST = {"devices": ["cpu"], "stages": ["burn"], "profile": "quick"}


def fleet(tmp_path: Path, shared: MemoryStore | None = None, join: float = 60.0, lost: float = 0.5):
    shared = shared or MemoryStore()
    channels = [channel(shared, rank, 2) for rank in range(2)]
    store = Store(tmp_path / "s.db")
    run_id = store.begin_fleet_run(["burn"], "quick", "python3", [], {"id": RUN})
    collector = Collector(store, run_id, channels[0], {"id": RUN}, join, lost)
    channels[0].announce({"name": "nodeA", **HOST})
    return shared, channels, store, run_id, collector


def until_lost(collector: Collector, step, timeout: float = 60.0) -> None:
    """Poll (doing `step` each time, as the agent and the attacker would) until host 1 is given up."""
    deadline = time.monotonic() + timeout
    while collector.hosts[1].state != "lost":
        assert time.monotonic() < deadline, "host 1 was never given up"
        step()
        collector.poll()
        time.sleep(0.02)


def verdicts(store: Store, run_id: int, collector: Collector, host: str = "nodeB") -> dict[str, dict]:
    collector.record_dropped()
    report = store.report(run_id)
    assert report is not None
    return {v["check_name"]: v for v in report["verdicts"] if v["host"] == host}


def running(channels, collector: Collector) -> None:
    channels[1].announce({"name": "nodeB", **HOST})
    channels[1].publish(StageStarted("burn", "cpu", 7, "python3"))
    collector.poll()
    assert collector.hosts[1].state == "running" and collector.hosts[1].beats >= 0


def test_a_heartbeat_deleted_as_it_comes_is_tampering_not_a_lost_host(tmp_path: Path) -> None:
    shared, channels, store, run_id, collector = fleet(tmp_path)
    running(channels, collector)

    def alive_but_deleted() -> None:
        channels[1].beat()  # the agent is healthy and keeps beating
        shared.data.pop("hb/1", None)  # someone on the store deletes it at once

    until_lost(collector, alive_but_deleted)
    found = verdicts(store, run_id, collector)
    assert "agent" not in found, found  # no "nodeB is lost"
    store_verdict = found["fleet-store"]
    assert store_verdict["explanation"].startswith("the fleet store was tampered with: its heartbeat hb/1 vanished")
    assert "says nothing against the host" in store_verdict["explanation"]
    assert found["fleet-channel"]["numbers"]["tampered"] >= 1
    assert "tampered with" in found["fleet-channel"]["explanation"]


def test_a_heartbeat_replaced_by_a_forgery_is_tampering_too(tmp_path: Path) -> None:
    shared, channels, store, run_id, collector = fleet(tmp_path)
    running(channels, collector)
    forger = channel(shared, 1, 2, key=b"not the fleet key, but 32 bytes!")

    def forged_over() -> None:
        forger._beats += 1
        forger.beat()  # its agent has stopped; someone keeps a forged heartbeat there

    until_lost(collector, forged_over)
    found = verdicts(store, run_id, collector)
    assert "agent" not in found
    assert found["fleet-store"]["explanation"].startswith(
        "the fleet store was tampered with: its heartbeat hb/1 was replaced (forged)"
    )
    assert found["fleet-channel"]["numbers"]["forged"] >= 1


def test_a_host_that_just_stops_is_still_lost_and_nothing_is_called_tampering(tmp_path: Path) -> None:
    _shared, channels, store, run_id, collector = fleet(tmp_path)
    running(channels, collector)
    until_lost(collector, lambda: None)  # its agent stopped: the heartbeat stays, it just stops rising
    found = verdicts(store, run_id, collector)
    assert "is lost: its agent stopped answering" in found["agent"]["explanation"]
    assert "fleet-store" not in found and "fleet-channel" not in found


def test_a_heartbeat_written_back_older_is_tampering_and_the_same_one_read_again_is_not(tmp_path: Path) -> None:
    shared, channels, store, run_id, collector = fleet(tmp_path)
    running(channels, collector)
    old = shared.data["hb/1"]
    for _ in range(3):
        channels[1].beat()
    collector.poll()
    collector.poll()  # the same state twice: nothing new, no sign
    assert not collector.hosts[1].tamper
    shared.data["hb/1"] = old  # this run's own older value, so its seal holds
    collector.poll()
    assert collector.hosts[1].tamper == [f"its heartbeat went back from {collector.hosts[1].beats} to 1"]
    until_lost(collector, lambda: None)
    assert (
        "the fleet store was tampered with: its heartbeat went back"
        in verdicts(store, run_id, collector)["fleet-store"]["explanation"]
    )


def test_a_deleted_event_slot_is_counted_as_tampering_on_a_host_that_finishes(tmp_path: Path) -> None:
    shared, channels, store, run_id, collector = fleet(tmp_path, lost=60)
    running(channels, collector)
    for text in ("one", "two", "three"):
        channels[1].publish(LogLine("burn", text))
    del shared.data["ev/1/2"]  # "two", before rank 0 read it
    channels[1].finish({"exit_code": 0, "run_id": 3, "store": "/b.db"})
    for _ in range(3):
        collector.poll()
    found = verdicts(store, run_id, collector)
    assert collector.hosts[1].state == "done" and "fleet-store" not in found
    assert found["fleet-channel"]["numbers"]["tampered"] == 1
    assert collector.hosts[1].tamper == ["its event slot ev/1/2 vanished before rank 0 read it"]


class WritesBetween(MemoryStore):
    """The agent writes slot 1 and slot 2 between rank 0's first look at slot 1 and its look ahead."""

    def check(self, keys: list[str]) -> bool:
        if keys == ["ev/1/2"] and "ev/1/1" not in self.data and self.pending:
            for key, value in self.pending:
                self.set(key, value)
            self.pending = []
        return super().check(keys)


def test_a_slot_written_between_two_looks_is_no_gap_and_one_still_empty_is(tmp_path: Path) -> None:
    shared = WritesBetween()
    shared.pending = []
    _shared, channels, _store, _run_id, collector = fleet(tmp_path, shared=shared, lost=60)
    running(channels, collector)  # slot 0
    channels[1].publish(LogLine("burn", "one"))
    channels[1].publish(LogLine("burn", "two"))
    shared.pending = [("ev/1/1", shared.data.pop("ev/1/1")), ("ev/1/2", shared.data.pop("ev/1/2"))]
    collector.hosts[1].scanned = 0.0  # a scan now: it looks past the empty slot
    collector.poll()
    assert not collector.hosts[1].tamper
    collector.poll()
    assert collector.hosts[1].read == 3
    channels[1].publish(LogLine("burn", "three"))
    channels[1].publish(LogLine("burn", "four"))
    del shared.data["ev/1/3"]
    collector.hosts[1].scanned = collector.hosts[1].looked_ahead = 0.0
    collector.poll()
    assert collector.hosts[1].tamper == ["its event slot ev/1/3 was empty while ev/1/4 after it was filled"]


def test_an_ask_that_vanished_before_the_host_joined_is_tampering_not_never_joined(tmp_path: Path) -> None:
    shared, channels, store, run_id, collector = fleet(tmp_path, join=3.0)
    channels[1].put("ask/1", {"c": "ef" * 16}, "")
    collector.poll()
    assert collector.hosts[1].answered == "ef" * 16
    until_lost(collector, lambda: shared.data.pop("ask/1", None) and shared.data.pop("nonce/1", None))
    text = verdicts(store, run_id, collector, "rank 1")["fleet-store"]["explanation"]
    assert text.startswith("the fleet store was tampered with: its request for the run's nonce ask/1 vanished")
    assert "never joined" in text
