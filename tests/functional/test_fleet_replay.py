"""A fleet run's seal binds a nonce rank 0 makes fresh for that run: values recorded from an earlier run with the
same id and key, played back into this one's slots, are dropped and counted as replays, never shown."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from fleet_memory import MemoryStore, channel
from rigcheck.engine.events import LogLine
from rigcheck.engine.fleet.channel import NONCE_SLOT
from rigcheck.engine.fleet.collector import Collector
from rigcheck.engine.store import Store

INFO = {"devices": ["cpu"], "stages": ["probe"], "profile": "quick"}


def run_a() -> dict[str, bytes]:
    """Run A, as a client on its store recorded it: nodeB's announcement, its events and heartbeat."""
    shared = MemoryStore()
    lead, node_b = channel(shared, 0, 2), channel(shared, 1, 2)
    assert lead.begin(5.0, lead=True) and node_b.begin(5.0, lead=False)
    node_b.announce({"name": "b", **INFO, "env": {"OMP_NUM_THREADS": "1"}})
    node_b.publish(LogLine("probe", "from run A"))
    node_b.publish(LogLine("probe", "also from run A"))
    node_b.beat()
    return dict(shared.data)


def logs(store: Store, run_id: int) -> list[str]:
    with sqlite3.connect(store.path) as db:
        rows = db.execute("SELECT payload FROM events WHERE run_id = ? AND kind = 'LogLine'", (run_id,))
        return [json.loads(payload)["text"] for (payload,) in rows]


def test_an_earlier_runs_values_played_back_are_dropped_as_replays(tmp_path: Path) -> None:
    recorded = run_a()
    shared = MemoryStore()
    lead = channel(shared, 0, 2)
    assert lead.begin(5.0, lead=True)
    for slot in ("host/1", "ev/1/0", "ev/1/1", "hb/1"):  # played back before nodeB writes
        shared.set(slot, recorded[slot])
    store = Store(tmp_path / "s.db")
    run_id = store.begin_fleet_run(["probe"], "quick", "python3", [], {"id": "same-id"})
    collector = Collector(store, run_id, lead, {"id": "same-id"}, 30.0, 30.0)
    lead.announce({"name": "a", **INFO})
    collector.poll()  # rank 0 reads the played-back values first
    node_b = channel(shared, 1, 2)
    assert node_b.begin(5.0, lead=False) and node_b.nonce == lead.nonce
    node_b.announce({"name": "b", **INFO})
    node_b.publish(LogLine("probe", "from run B"))
    for _ in range(3):
        collector.poll()
    collector.record_dropped()
    report = store.report(run_id)
    assert report is not None
    assert logs(store, run_id) == ["from run B"]
    [warn] = [v for v in report["verdicts"] if v["check_name"] == "fleet-channel"]
    assert warn["numbers"]["replayed"] >= 3 and warn["numbers"]["forged"] == 0, warn
    assert "another fleet run" in warn["explanation"] and "without the fleet key" not in warn["explanation"]


def test_an_earlier_runs_nonce_planted_first_is_overwritten_and_told(tmp_path: Path) -> None:
    recorded = run_a()
    shared = MemoryStore()
    shared.set(NONCE_SLOT, recorded[NONCE_SLOT])
    lead = channel(shared, 0, 2)
    assert lead.begin(5.0, lead=True)
    assert lead.nonce_planted == recorded[NONCE_SLOT]
    assert shared.data[NONCE_SLOT] != recorded[NONCE_SLOT]  # rank 0's own nonce is what the agents read


def test_two_runs_never_share_a_nonce() -> None:
    nonces = set()
    for _ in range(20):
        lead = channel(MemoryStore(), 0, 1)
        lead.begin(1.0, lead=True)
        nonces.add(lead.nonce)
    assert len(nonces) == 20 and all(len(n) == 32 for n in nonces)
