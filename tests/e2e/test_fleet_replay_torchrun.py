"""Issue 35.6 as it was tried: two torchrun fleet runs with the same --rdzv-id and the same key. A client on run
A's store records rank 1's sealed values; on run B's store it writes them into rank 1's slots before the agent
does. Run B drops and counts them as replays (never as "someone without the fleet key"), shows nothing of run A
(no OMP_NUM_THREADS=1, which only run A had), and keeps every event of its own hosts."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from pathlib import Path

import pytest
from fleet_driver import fleet_report, start_fleet
from test_fleet_rogue import rogue_client, store_port

pytestmark = pytest.mark.timeout(600)
ARGS = ["probe", "--profile", "quick", "--device", "cpu", "--no-links", "--lost-after", "60"]
RDZV = "bringup-7"
SLOTS = [f"ev/1/{n}" for n in range(8)] + ["host/1", "hb/1"]


def record(tmp_path: Path) -> dict[str, bytes]:
    """Run A, with a client copying rank 1's values off the store while it runs."""
    folder = tmp_path / "run-a"
    folder.mkdir()
    env = {name: {"OMP_NUM_THREADS": "1"} for name in ("a-one", "a-two")}
    fleet = start_fleet(folder, ["a-one", "a-two"], ARGS, env_for=env, rdzv_id=RDZV)
    seen: dict[str, bytes] = {}
    stop = threading.Event()
    try:
        store = rogue_client(store_port(fleet), RDZV)

        def copy() -> None:
            while not stop.is_set():
                for key in SLOTS:
                    with contextlib.suppress(Exception):
                        if store.check([key]):
                            seen.setdefault(key, store.get(key))  # the first value each slot held
                time.sleep(0.05)

        copier = threading.Thread(target=copy, daemon=True)
        copier.start()
        report = fleet_report(300, fleet)
        stop.set()
        copier.join(30)
    finally:
        stop.set()
        fleet.stop()
    assert report["run"]["status"] == "complete"
    assert [key for key in seen if key.startswith("ev/1/")], seen.keys()
    return seen


def test_run_as_sealed_values_replayed_into_run_b_are_dropped_as_replays(tmp_path: Path) -> None:
    recorded = record(tmp_path)
    folder = tmp_path / "run-b"
    folder.mkdir()
    fleet = start_fleet(folder, ["b-one", "b-two"], ARGS, rdzv_id=RDZV)
    landed = []
    try:
        store = rogue_client(store_port(fleet), RDZV)
        for key, value in recorded.items():  # into rank 1's slots while they are empty, as before the agent wrote
            if key.startswith("ev/") and store.compare_set(key, "", value) == value:
                landed.append(key)
            elif not key.startswith("ev/") and not store.check([key]):
                store.set(key, value)
                landed.append(key)
        report = fleet_report(300, fleet)
    finally:
        fleet.stop()
    assert landed, "no recorded value landed before run B's agent wrote"
    assert report["run"]["status"] == "complete" and report["run"]["exit_code"] == 0, report["run"]
    assert report["fleet"]["states"] == {"b-one": "done", "b-two": "done"}
    assert sorted((s["host"], s["status"]) for s in report["stages"]) == [("b-one", "PASS"), ("b-two", "PASS")]
    text = json.dumps(report)
    assert "a-one" not in text and "a-two" not in text and "OMP_NUM_THREADS : 1" not in text
    assert not [v["explanation"] for v in report["verdicts"] if "OMP_NUM_THREADS" in v["explanation"]]
    channel = [v for v in report["verdicts"] if v["check_name"] == "fleet-channel"]
    assert channel, "the replays were not counted"
    assert sum(v["numbers"]["replayed"] for v in channel) >= 1, channel
    assert all(v["numbers"]["forged"] == 0 for v in channel), channel
    assert all("without the fleet key" not in v["explanation"] for v in channel), channel
