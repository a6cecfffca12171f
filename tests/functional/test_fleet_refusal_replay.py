"""Issue 35.6, the refusal: rank 0's early refusal ("bad input, I will not start") was sealed without the run's
nonce, so that agents still waiting for that nonce could read it. Recorded in run A and replayed into run B (same
key, same `--rdzv-id`), it made B's agents give up the fleet and run alone, and B's healthy rank 0 skip nothing.
Now a refusal counts only when bound to this run: rank 0 answers each agent's own fresh challenge with it (as it
answers with the nonce), and the refusal it leaves on the store is sealed with the run's nonce. A replayed one is
dropped, and rank 0 counts it as a replay on its own host."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from fleet_memory import KEY, RUN, MemoryStore, channel
from rigcheck.engine.fleet import refusal
from rigcheck.engine.fleet.collector import Collector
from rigcheck.engine.fleet.env import FleetEnv
from rigcheck.engine.fleet.handshake import NoNonce, join
from rigcheck.engine.fleet.refusal import refuse_early
from rigcheck.engine.fleet.seal import new_nonce
from rigcheck.engine.store import Store
from test_fleet_replay import joined

WHY = "bad profile 'fast': use one of quick, standard, full"


def early_refusal(shared: MemoryStore, monkeypatch: pytest.MonkeyPatch, timeout: float = 30.0) -> str | None:
    """Rank 0 refuses before it starts (agent_main's bad input path, `refuse_early`) while agent 1 of the same run
    waits for its nonce; what the agent was told (None: it got a nonce)."""
    monkeypatch.setattr(refusal, "connect", lambda env, timeout: shared)
    env = FleetEnv(0, 2, "127.0.0.1", 1, RUN, "a", False, "torchrun")
    refusing = threading.Thread(target=refuse_early, args=(env, KEY, WHY, timeout))
    waiting = channel(shared, 1, 2)
    told: list[str | None] = []

    def wait() -> None:
        try:
            join(waiting, timeout, poll=0.01)
            told.append(None)
        except NoNonce as error:
            told.append(str(error))

    asking = threading.Thread(target=wait)
    asking.start()
    refusing.start()
    asking.join(timeout + 10)
    refusing.join(timeout + 10)
    return told[0]


def test_a_genuine_early_refusal_still_reaches_the_agents_of_its_run(monkeypatch: pytest.MonkeyPatch) -> None:
    told = early_refusal(MemoryStore(), monkeypatch)
    assert told is not None and "rank 0 refused to start: bad profile 'fast'" in told


def test_an_early_refusal_replayed_into_another_run_is_dropped_and_counted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorded = MemoryStore()  # run A: rank 0 refused early; a client on its store recorded every value
    assert early_refusal(recorded, monkeypatch) is not None
    shared = MemoryStore()  # run B: the same key and rendezvous id, a healthy rank 0
    shared.data.update(recorded.data)  # replayed before anyone of run B writes
    rank0, agent = channel(shared, 0, 2), channel(shared, 1, 2)
    rank0.nonce = new_nonce()
    store = Store(tmp_path / "s.db")
    run_id = store.begin_fleet_run(["probe"], "quick", "python3", [], {"id": RUN})
    collector = Collector(store, run_id, rank0, {"id": RUN}, 60.0, 60.0)
    rank0.announce({"name": "a", "devices": ["cpu"], "stages": ["probe"], "profile": "quick"})
    joined(agent, collector)  # no NoNonce: the agent does not run alone
    assert agent.nonce == rank0.nonce
    assert agent.refused(0) is None  # nor does it skip the collectives later on the replayed refusal
    assert rank0.refused(0) is None
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not collector.dropped.get(0):
        collector.poll()
        time.sleep(0.05)
    collector.record_dropped()
    report = store.report(run_id)
    assert report is not None
    assert "bad profile" not in str(report)  # never shown
    [warn] = [v for v in report["verdicts"] if v["check_name"] == "fleet-channel" and v["host"] == "a"]
    assert warn["host"] == "a" and warn["numbers"]["replayed"] >= 1 and warn["numbers"]["forged"] == 0, warn
    assert "another fleet run" in warn["explanation"]
    kept = [v for v in report["verdicts"] if v["check_name"] == "fleet-channel" and v["host"] != "a"]
    assert all("tampered" in v["explanation"] for v in kept), kept  # the replayed answer the agent saw: tampering
    assert collector.hosts[0].state != "lost" and collector.hosts[1].state != "lost"
