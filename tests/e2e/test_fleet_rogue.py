"""The fleet against someone else on its store: a real rogue TCPStore client on a running torchrun fleet writes
forged, malformed and huge events and a huge counter, and rank 0 drops and counts them while the run carries
on. Also: an agent's refusal reaches rank 0, `rigcheck fleet` never imports from the caller's folder and exits
with the agent's own code, and an agent without the fleet key will not start."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import psutil
import pytest
from fleet_driver import FLEET_KEY, Fleet, fleet_report, free_port, start_fleet
from rigcheck.engine.events import LogLine, Measurement, Status, Verdict, event_to_dict
from rigcheck.engine.fleet.seal import seal
from rigcheck.engine.store import Store

pytestmark = pytest.mark.timeout(420)
AGENT_ARGS = ["probe", "--profile", "quick", "--device", "cpu", "--no-links"]
WRONG_KEY = b"the rogue does not have the fleet key"
ESC = "\x1b]0;pwned\x07\x1b[2J"


def store_port(fleet: Fleet, timeout: float = 180.0) -> int:
    """The port of the store the agents use (torchrun's agent store, MASTER_PORT: not the rendezvous port),
    read from the first agent's environment as soon as torchrun has started it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for agent in fleet.agents:
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(agent.proc.pid).children(recursive=True):
                    port = child.environ().get("MASTER_PORT")
                    if port and "rigcheck.fleet" in " ".join(child.cmdline()):
                        return int(port)
        time.sleep(0.1)
    raise AssertionError("no agent started")


def rogue_client(port: int, run_id: str, timeout: float = 120.0) -> Any:
    """A client of torchrun's store as any local user could make one, seeing the fleet's keys."""
    from torch.distributed import PrefixStore, TCPStore

    deadline = time.monotonic() + timeout
    while True:
        try:
            client = TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=10))
            return PrefixStore(f"rigcheck/{run_id}/", client)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def forged(run_id: str, slot: str, event: Any) -> str:
    return seal(WRONG_KEY, run_id, slot, {"seq": 0, "event": event_to_dict(event)})


def attack(store: Any, run_id: str, rank: int, first: int) -> int:
    """Forged, malformed and huge values in rank `rank`'s event slots from `first` on; how many it wrote."""
    values = [
        forged(run_id, f"ev/{rank}/{first}", Verdict("probe", "sweep", Status.PASS, "forged verdict")),
        forged(run_id, f"ev/{rank}/{first + 1}", Measurement("matmul", "matmul bf16 4096", 1e5, "TFLOP/s")),
        "[]",
        json.dumps({"kind": "Verdict", "status": "NOPE"}),
        "x" * (6 << 20),
        json.dumps({"seq": 0, "event": event_to_dict(LogLine("probe", f"injected {ESC}"))}),
    ]
    for n, value in enumerate(values):
        store.set(f"ev/{rank}/{first + n}", value)
    return len(values)


def test_a_rogue_client_on_the_store_is_dropped_and_counted_while_the_run_carries_on(tmp_path: Path) -> None:
    fleet = start_fleet(tmp_path, ["host-a", "host-b"], [*AGENT_ARGS, "--lost-after", "60"])
    run_id = f"test-{fleet.port}"
    try:
        store = rogue_client(store_port(fleet), run_id)
        written = sum(attack(store, run_id, rank, 0) for rank in (0, 1))  # before the agents send anything
        store.add("evn/1", 10**18)  # the counter rank 0 once trusted: it waited 3,600 s on this
        store.set("done/1", json.dumps({"p": json.dumps({"slots": 0, "sent": 0}), "m": "0" * 64}))
        deadline = time.monotonic() + 240
        while not store.check(["hb/1"]) and time.monotonic() < deadline:  # rank 1's agent is running
            time.sleep(0.2)
        free = next(n for n in range(10**4) if not store.check([f"ev/1/{n}"]))
        written += attack(store, run_id, 1, free)  # and again while it runs
        report = fleet_report(300, fleet)
    finally:
        fleet.stop()
    assert report["run"]["status"] == "complete" and report["run"]["exit_code"] == 0
    assert report["fleet"]["states"] == {"host-a": "done", "host-b": "done"}
    assert sorted((s["host"], s["status"]) for s in report["stages"]) == [("host-a", "PASS"), ("host-b", "PASS")]
    assert not [m for m in report["measurements"] if m["value"] == 1e5]
    assert not [v for v in report["verdicts"] if "forged" in v["explanation"] or v["status"] == "NOPE"]
    channel = {v["host"]: v for v in report["verdicts"] if v["check_name"] == "fleet-channel"}
    assert set(channel) == {"host-a", "host-b", "(unknown)"}, channel
    assert all(v["status"] == "WARN" for v in channel.values())
    assert channel["host-a"]["numbers"]["forged"] >= 2 and channel["host-b"]["numbers"]["forged"] >= 3
    counted = sum(v["numbers"]["forged"] + v["numbers"]["unreadable"] for v in channel.values())
    assert counted >= written - 1, (counted, written)  # the last write may land after host-b's end
    assert "\x1b" not in json.dumps(report) and "pwned" not in json.dumps(report)


def test_an_agents_refusal_reaches_rank_0_and_is_quoted(tmp_path: Path) -> None:
    """Ranks from Slurm's variables (rank 0 serves the store), so which host refuses is known."""
    port, procs = free_port(), []
    for rank, (name, store) in enumerate((("node1", tmp_path / "node1.db"), ("node2", tmp_path / "no" / "s.db"))):
        env = {
            **os.environ,
            "SLURM_PROCID": str(rank),
            "SLURM_NTASKS": "2",
            "SLURM_JOB_ID": "77",
            "SLURM_JOB_NODELIST": "node[1-2]",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
            "RIGCHECK_NODE_NAME": name,
            "RIGCHECK_STORE": str(store),
            "RIGCHECK_FLEET_KEY": FLEET_KEY,
        }
        for key in ("RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
            env.pop(key, None)
        argv = [sys.executable, "-m", "rigcheck.fleet", *AGENT_ARGS, "--join-timeout", "200"]
        procs.append(subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    started = time.monotonic()
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [3, 2], outs  # rank 0: a host did not run; node2: bad input
    assert time.monotonic() - started < 190  # not the 200 s join timeout
    assert outs[1][1].count("\n") == 1 and "does not exist" in outs[1][1]
    report = Store(tmp_path / "node1.db").report(1)
    assert report is not None
    [refused] = [v for v in report["verdicts"] if v["check_name"] == "agent"]
    assert refused["host"] == "node2" and refused["status"] == "CRASH"
    assert "refused to start" in refused["explanation"] and "does not exist" in refused["explanation"]
    assert report["fleet"]["states"] == {"node1": "done", "node2": "lost"}


def test_rigcheck_fleet_ignores_the_callers_folder_and_exits_with_the_agents_code(tmp_path: Path) -> None:
    """From a folder holding a `rigcheck` package that would run as the caller, a one-host fleet whose stage times
    out: the package is never imported, and `rigcheck fleet` exits 3 as the agent did (torchrun says 1), saying so
    in one line, never with torchrun's ChildFailedError traceback."""
    folder = tmp_path / "shared-folder"
    (folder / "rigcheck").mkdir(parents=True)
    marker = tmp_path / "HIJACKED"
    (folder / "rigcheck" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    env = {**os.environ, "RIGCHECK_STORE": str(tmp_path / "s.db")}
    env.pop("RIGCHECK_FLEET_KEY", None)  # one host: `rigcheck fleet` makes the key
    port = free_port()
    argv = [sys.executable, "-P", "-m", "rigcheck.tui.cli", "fleet", "--nnodes", "1"]
    argv += ["--endpoint", f"127.0.0.1:{port}", "--id", f"t{port}", *AGENT_ARGS, "--timeout", "0.1"]
    done = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, timeout=300)
    assert not marker.exists(), "a rigcheck package in the caller's folder was imported"
    assert done.returncode == 3, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]  # torchrun's ChildFailedError: one line instead
    assert done.stderr.strip().splitlines()[-1] == "rigcheck fleet: this host's agent ended with exit code 3"
    report = Store(tmp_path / "s.db").report(1)
    assert report is not None and report["run"]["device"] == "fleet"
    assert [s["status"] for s in report["stages"]] == ["TIMEOUT"]


@pytest.mark.parametrize(("key", "said"), [("", "RIGCHECK_FLEET_KEY"), (" " * 16, "hex"), ("é" * 16, "hex")])
def test_an_agent_without_the_fleet_key_will_not_start(tmp_path: Path, key: str, said: str) -> None:
    env = {
        **({"RIGCHECK_FLEET_KEY": key} if key else {}),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "RIGCHECK_STORE": str(tmp_path / "s.db"),
        **{"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())},
    }
    done = subprocess.run(
        [sys.executable, "-m", "rigcheck.fleet", "probe"], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and said in done.stderr and "openssl rand" in done.stderr, done.stderr
    assert not (tmp_path / "s.db").exists()  # refused before anything was opened


def test_a_heartbeat_deleted_every_10_ms_is_reported_as_tampering_not_a_lost_host(tmp_path: Path) -> None:
    """Issue 35.7 as it was tried: a client on the store deletes rank 1's heartbeat every 10 ms while both hosts
    burn. Rank 1's host is healthy (its own store complete): the fleet run never calls it lost, counts the
    tampering, and either keeps its events (they show it lives) or says the store was tampered with."""
    args = ["burn", "--device", "cpu", "--duration", "16", "--profile", "quick", "--no-links", "--lost-after", "6"]
    fleet = start_fleet(tmp_path, ["host-a", "host-b"], args)
    run_id = f"test-{fleet.port}"
    stop = threading.Event()
    try:
        store = rogue_client(store_port(fleet), run_id)

        def delete_heartbeat() -> None:
            while not stop.is_set():
                with contextlib.suppress(Exception):
                    store.delete_key("hb/1")
                time.sleep(0.01)

        deleter = threading.Thread(target=delete_heartbeat, daemon=True)
        deleter.start()
        report = fleet_report(400, fleet)
        rank0 = report["fleet"]["rank0"]
        [silenced] = [host for host in ("host-a", "host-b") if host != rank0]
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not local_end(tmp_path / f"{silenced}.db"):
            time.sleep(0.5)
    finally:
        stop.set()
        fleet.stop()
    found = {v["check_name"]: v for v in report["verdicts"] if v["host"] == silenced}
    assert "agent" not in found, found.get("agent")  # not "host-b is lost"
    assert found["fleet-channel"]["numbers"]["tampered"] >= 1
    assert "tampered with" in found["fleet-channel"]["explanation"]
    if report["fleet"]["states"][silenced] == "lost":  # its events did not come often enough to show it lived
        assert found["fleet-store"]["explanation"].startswith("the fleet store was tampered with: its heartbeat hb/1")
    else:  # its events kept it alive: all of them reached rank 0's run
        # rank 0 shows the stage as the host's own store ended it (NOT JUDGED on a CPU, or a WARN a busy machine's
        # burn earned), and never a fault
        statuses = [s["status"] for s in report["stages"] if s["host"] == silenced]
        assert statuses == local_statuses(tmp_path / f"{silenced}.db"), report["stages"]
        assert statuses[0] in ("PASS", "NOT JUDGED", "WARN"), report["stages"]
    assert local_end(tmp_path / f"{silenced}.db") == ("complete", 0)  # the silenced host itself was healthy


def local_statuses(path: Path) -> list[str]:
    """The stage statuses of a host's own run, as its own store holds them."""
    [run] = [r for r in Store(path).runs() if r["device"] != "fleet"]
    report = Store(path).report(int(run["id"]))
    assert report is not None
    return [stage["status"] for stage in report["stages"]]


def local_end(path: Path) -> tuple[str, int] | None:
    """How a host's own run ended, once it has."""
    with contextlib.suppress(Exception):
        [run] = [r for r in Store(path).runs() if r["device"] != "fleet"]
        if run["status"] != "running":
            return run["status"], run["exit_code"]
    return None


def test_a_host_kept_out_by_deleting_its_ask_and_answer_is_tampering_on_both_sides(tmp_path: Path) -> None:
    """Issue 44.3 as it was tried: a client without the key deletes rank 1's ask and rank 0's answer as they appear.
    Rank 0 names it tampering (not "its agent never joined") and the host kept out says so in its own store."""
    import torch.distributed  # noqa: F401  # before the agents start: her client must be deleting before rank 1 asks

    fleet = start_fleet(tmp_path, ["host-a", "host-b"], [*AGENT_ARGS, "--join-timeout", "12"])
    run_id = f"test-{fleet.port}"
    stop = threading.Event()
    try:
        port = store_port(fleet)
        store = rogue_client(port, run_id)

        def keep_out() -> None:
            client = store
            while not stop.is_set():
                try:
                    for key in ("ask/1", "nonce/1"):
                        client.delete_key(key)
                except Exception:  # its connection reset (seen on a loaded host): she connects again, as anyone would
                    with contextlib.suppress(Exception):
                        client = rogue_client(port, run_id, timeout=5.0)
                time.sleep(0.002)

        threading.Thread(target=keep_out, daemon=True).start()
        report = fleet_report(300, fleet)
        kept = next(host for host in ("host-a", "host-b") if host != report["fleet"]["rank0"])
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and local_end(tmp_path / f"{kept}.db") is None:
            time.sleep(0.5)
    finally:
        stop.set()
        fleet.stop()
    found = {v["check_name"]: v for v in report["verdicts"] if v["host"] == "rank 1"}
    assert "agent" not in found, found.get("agent")  # not "its agent never joined"
    assert found.get("fleet-store", {}).get("explanation", "").startswith("the fleet store was tampered with: "), found
    [own] = [r for r in Store(tmp_path / f"{kept}.db").runs() if r["device"] != "fleet"]
    said = Store(tmp_path / f"{kept}.db").report(int(own["id"]))
    assert said is not None
    [kept_out] = [v for v in said["verdicts"] if v["stage"] == "fleet"]
    assert (
        kept_out["status"] == "SKIP"
        and "kept out of the fleet run: the fleet store was tampered with" in (kept_out["explanation"])
    )
    # it ran alone to its end, or torchrun stopped it once rank 0 had ended: never "cancelled by the user"
    assert not [v for v in said["verdicts"] if "by the user" in v["explanation"]], said["verdicts"]
