"""Issue 35.6: a fleet run fed the sealed values of an earlier run with the same key and rendezvous id. Each run's
seal binds the nonce rank 0 made for it, and an agent takes that nonce only in answer to its own fresh challenge;
a value recorded in run A and written into run B's slots is dropped, counted as a replay (not as a forgery by
"someone without the fleet key"), and never shown, while B's own events are all kept."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fleet_memory import KEY, RUN, MemoryStore, channel
from rigcheck.engine.events import LogLine, Measurement, StageFinished, StageStarted, Status
from rigcheck.engine.fleet.channel import FleetChannel
from rigcheck.engine.fleet.collector import Collector
from rigcheck.engine.fleet.handshake import NoNonce, answer, join
from rigcheck.engine.fleet.seal import Unsealed, new_nonce, seal, unseal
from rigcheck.engine.store import Store

NAME = {"name": "b", "devices": ["cpu"], "stages": ["probe"], "profile": "quick"}


def run_a() -> dict[str, bytes]:
    """What a client on run A's store recorded: agent 1's announcement, heartbeat, events and end."""
    shared = MemoryStore()
    agent = channel(shared, 1, 2)
    agent.nonce = new_nonce()
    agent.announce({**NAME, "name": "b-from-run-a"})
    agent.publish(StageStarted("probe", "cpu", 1, "python3"))
    agent.publish(LogLine("probe", "OMP_NUM_THREADS=1 (only run A had it)"))
    agent.publish(Measurement("probe", "old figure", 12.0, "GB/s", device="cpu"))
    agent.publish(StageFinished("probe", Status.PASS))
    agent.finish({"exit_code": 0})
    return dict(shared.data)


def joined(agent: FleetChannel, collector: Collector, timeout: float = 60.0) -> None:
    """The agent asks for the run's nonce while rank 0's collector polls, as in a real run."""
    failed: list[BaseException] = []

    def ask() -> None:
        try:
            join(agent, timeout, poll=0.01)
        except BaseException as error:  # handed to the test thread
            failed.append(error)

    asking = threading.Thread(target=ask)
    asking.start()
    deadline = time.monotonic() + timeout
    while asking.is_alive() and time.monotonic() < deadline:
        collector.poll()
        time.sleep(0.01)
    asking.join(timeout)
    assert not failed, failed


def test_values_recorded_in_run_a_and_replayed_into_run_b_are_dropped_as_replays(tmp_path: Path) -> None:
    recorded = run_a()
    shared = MemoryStore()
    rank0, agent = channel(shared, 0, 2), channel(shared, 1, 2)
    rank0.nonce = new_nonce()
    store = Store(tmp_path / "s.db")
    run_id = store.begin_fleet_run(["probe"], "quick", "python3", [], {"id": RUN})
    collector = Collector(store, run_id, rank0, {"id": RUN}, 60.0, 60.0)
    rank0.announce({**NAME, "name": "a"})
    replayed = ["host/1", "ev/1/0", "ev/1/1", "ev/1/2"]
    for key in replayed:  # before agent 1 of run B writes anything
        shared.data[key] = recorded[key]
    collector.poll()
    assert collector.hosts[1].state == "waiting"  # run A's announcement does not make a host join
    joined(agent, collector)
    assert agent.nonce == rank0.nonce
    agent.announce(NAME)
    agent.publish(StageStarted("probe", "cpu", 2, "python3"))
    collector.poll()
    shared.data["hb/1"] = recorded["hb/1"]  # run A's last state (ended, every slot) over the live agent's
    replayed.append("hb/1")
    collector.poll()
    assert not collector.hosts[1].ended
    agent.publish(Measurement("probe", "new figure", 20.0, "GB/s", device="cpu"))
    agent.publish(StageFinished("probe", Status.PASS))
    agent.finish({"exit_code": 0})
    for _ in range(5):
        collector.poll()
    collector.record_dropped()
    report = store.report(run_id)
    assert report is not None
    assert report["fleet"]["states"]["b"] == "done"
    assert [(m["host"], m["name"]) for m in report["measurements"]] == [("b", "new figure")]
    assert "OMP_NUM_THREADS" not in str(report) and "b-from-run-a" not in str(report)
    [warn] = [v for v in report["verdicts"] if v["check_name"] == "fleet-channel"]
    assert warn["host"] == "b" and warn["status"] == "WARN"
    assert warn["numbers"]["replayed"] == len(replayed) and warn["numbers"]["forged"] == 0, warn
    assert "another fleet run" in warn["explanation"] and "without the fleet key" not in warn["explanation"]


def test_a_recorded_answer_is_not_taken_by_an_agent_of_another_run() -> None:
    """Rank 0's answer to run A's challenge, written where run B's agent waits: the agent never takes it."""
    shared_a = MemoryStore()
    rank0_a, agent_a = channel(shared_a, 0, 2), channel(shared_a, 1, 2)
    rank0_a.nonce = new_nonce()
    agent_a.put("ask/1", {"c": "ab" * 16}, "")
    assert answer(rank0_a, 1) == ("ab" * 16, True, None)
    shared_b = MemoryStore()
    shared_b.data["nonce/1"] = shared_a.data["nonce/1"]
    agent_b = channel(shared_b, 1, 2)
    with pytest.raises(
        NoNonce, match=r"tampered with \(1 sign\(s\): its answer slot nonce/1 held an answer to another"
    ):
        join(agent_b, 0.3, poll=0.01)
    assert agent_b.nonce == "" and agent_a.nonce == ""


def test_a_replayed_ask_gets_its_answer_but_the_agents_own_is_answered_too(tmp_path: Path) -> None:
    shared = MemoryStore()
    rank0, agent = channel(shared, 0, 2), channel(shared, 1, 2)
    rank0.nonce = new_nonce()
    shared.data["ask/1"] = seal(KEY, RUN, "ask/1", {"c": "cd" * 16}).encode()  # recorded in another run
    store = Store(tmp_path / "s.db")
    collector = Collector(store, store.begin_fleet_run(["probe"], "quick", "p", [], {"id": RUN}), rank0, {}, 60, 60)
    collector.poll()
    assert collector.hosts[1].answered == "cd" * 16
    joined(agent, collector)  # its own ask replaces the old one, and rank 0 answers again
    assert agent.nonce == rank0.nonce


@pytest.mark.parametrize(
    ("nonce_sealed", "nonce_read", "reason"),
    [("a" * 32, "b" * 32, "replayed"), ("", "b" * 32, "replayed"), ("a" * 32, "", "replayed")],
)
def test_the_seal_tells_a_replay_from_a_forgery(nonce_sealed: str, nonce_read: str, reason: str) -> None:
    value = seal(KEY, RUN, "ev/1/0", {"x": 1}, nonce_sealed).encode()
    assert unseal(KEY, RUN, "ev/1/0", value, nonce_sealed).body == {"x": 1}
    with pytest.raises(Unsealed) as why:
        unseal(KEY, RUN, "ev/1/0", value, nonce_read)
    assert why.value.reason == reason
    if nonce_sealed and nonce_read:  # the nonce it carries rewritten to this run's: the seal no longer holds
        moved = value.replace(f'"n":"{nonce_sealed}"'.encode(), f'"n":"{nonce_read}"'.encode())
        assert moved != value
        with pytest.raises(Unsealed) as why:
            unseal(KEY, RUN, "ev/1/0", moved, nonce_read)
        assert why.value.reason == "forged"
    with pytest.raises(Unsealed) as why:
        unseal(b"another key entirely, 32 bytes!!", RUN, "ev/1/0", value, nonce_read)
    assert why.value.reason == "forged"
