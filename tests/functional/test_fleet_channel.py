"""The fleet channel and rank 0's collector against an in-memory store: events land with their host, a silent
agent is lost, one that never joins is lost, and a phase admits the agents still alive."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fleet_memory import KEY, MemoryStore, channel
from rigcheck.engine.events import Measurement, Progress, StageFinished, StageStarted, Status
from rigcheck.engine.fleet.collector import Collector
from rigcheck.engine.fleet.env import FleetEnvError, first_slurm_host, read_env
from rigcheck.engine.store import Store


def fleet_of(tmp_path: Path, world: int, join_timeout: float = 30.0, lost_after: float = 30.0):
    shared = MemoryStore()
    channels = [channel(shared, rank, world) for rank in range(world)]
    store = Store(tmp_path / "s.db")
    run_id = store.begin_fleet_run(["matmul"], "quick", "python3", [], {"id": "t"})
    collector = Collector(store, run_id, channels[0], {"id": "t"}, join_timeout, lost_after)
    return channels, store, run_id, collector


def test_events_land_with_their_host_and_the_end_is_seen(tmp_path: Path) -> None:
    channels, store, run_id, collector = fleet_of(tmp_path, 2)
    for rank, name in enumerate(("a", "b")):
        ch = channels[rank]
        ch.announce({"name": name, "devices": ["cpu"]})
        ch.publish(StageStarted("matmul", "cpu", 1, "python3"))
        ch.publish(Measurement("matmul", "matmul fp32 1024", 10.0 * (rank + 1), "GFLOP/s", device="cpu"))
        ch.publish(StageFinished("matmul", Status.PASS))
        ch.finish({"exit_code": 0})
    collector.poll()
    report = store.report(run_id)
    assert report is not None
    assert {(m["host"], m["value"]) for m in report["measurements"]} == {("a", 10.0), ("b", 20.0)}
    assert report["fleet"]["states"] == {"a": "done", "b": "done"}


def test_progress_is_coalesced_but_the_last_step_always_goes(tmp_path: Path) -> None:
    channels, *_ = fleet_of(tmp_path, 1)
    ch = channels[0]
    now = time.time()
    for step in range(10):
        ch.publish(Progress("matmul", step, 10, t=now + step * 0.01))
    ch.publish(Progress("matmul", 10, 10, t=now + 0.2))
    sent = [ch._get(f"ev/0/{n}") for n in range(ch._slot)]
    assert [e["event"]["done"] for burst in sent for e in burst["burst"]] == [0, 10]


def test_a_silent_agent_is_lost_with_its_last_event_and_its_stage_interrupted(tmp_path: Path) -> None:
    channels, store, run_id, collector = fleet_of(tmp_path, 2, lost_after=0.3)
    channels[0].announce({"name": "a"})
    channels[1].announce({"name": "b"})
    channels[1].publish(StageStarted("matmul", "cpu", 1, "python3"))
    collector.poll()
    time.sleep(0.4)
    channels[0].beat()  # a keeps beating; b has gone quiet
    collector.poll()
    report = store.report(run_id)
    assert report is not None
    assert report["fleet"]["states"] == {"a": "running", "b": "lost"}
    [lost] = [v for v in report["verdicts"] if v["check_name"] == "agent"]
    assert lost["host"] == "b" and lost["status"] == "CRASH" and "matmul started" in lost["explanation"]
    assert [(s["host"], s["status"]) for s in report["stages"]] == [("b", "INTERRUPTED")]


def test_an_agent_that_never_joins_is_lost_and_a_phase_goes_on_without_it(tmp_path: Path) -> None:
    channels, store, run_id, collector = fleet_of(tmp_path, 3, join_timeout=1.0)
    opened = time.monotonic()
    collector.open_phase("links")
    for rank in (0, 1):
        channels[rank].announce({"name": "abc"[rank]})
        channels[rank].arrive("links")
    collector.poll()
    if time.monotonic() - opened < 1.0:  # a first poll slower than the join timeout may rightly close the phase
        assert channels[1].members("links") is None  # rank 2 may still join
    deadline = time.monotonic() + 60
    while channels[1].members("links") is None:
        assert time.monotonic() < deadline, "the phase never went on without rank 2"
        time.sleep(0.05)
        collector.poll()
    assert channels[1].members("links") == [0, 1]
    assert time.monotonic() - opened >= 1.0  # not before the join timeout
    report = store.report(run_id)
    assert report is not None
    [lost] = [v for v in report["verdicts"] if v["check_name"] == "agent"]
    assert "never joined" in lost["explanation"] and lost["host"] == "rank 2"


def test_the_environment_of_torchrun_and_of_srun() -> None:
    torchrun = {
        "RANK": "2",
        "WORLD_SIZE": "4",
        "MASTER_ADDR": "node0",
        "MASTER_PORT": "29500",
        "TORCHELASTIC_RUN_ID": "r7",
        "TORCHELASTIC_USE_AGENT_STORE": "True",
        "LOCAL_WORLD_SIZE": "1",
        "RIGCHECK_NODE_NAME": "gpu-17",
    }
    env = read_env(torchrun)
    assert (env.rank, env.world, env.store_host, env.store_port, env.run_id, env.node) == (
        2,
        4,
        "node0",
        29500,
        "r7",
        "gpu-17",
    )
    assert not env.hosts_store
    slurm = {"SLURM_PROCID": "0", "SLURM_NTASKS": "3", "SLURM_JOB_NODELIST": "gpu[03-05]", "SLURM_JOB_ID": "99"}
    env = read_env(slurm)
    assert (env.rank, env.world, env.store_host, env.run_id, env.hosts_store) == (0, 3, "gpu03", "99", True)
    assert first_slurm_host("cpu1,gpu[2,4]") == "cpu1"
    with pytest.raises(FleetEnvError, match="one per host"):
        read_env(torchrun | {"LOCAL_WORLD_SIZE": "8"})
    with pytest.raises(FleetEnvError, match="torchrun"):
        read_env({})
    with pytest.raises(FleetEnvError, match="outside"):
        read_env(torchrun | {"RANK": "4"})


def test_rigcheck_fleet_builds_the_torchrun_command_and_refuses_a_bad_endpoint(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from rigcheck.tui.cli import main
    from rigcheck.tui.cli_fleet import launch_argv
    from rigcheck.tui.cli_parser import build_parser

    args, rest = build_parser().parse_known_args(
        ["fleet", "--nnodes", "4", "--endpoint", "node0:29400", "--id", "b7", "--rendezvous-client", "probe", "-v"]
    )
    argv = launch_argv(args, rest)
    assert argv[1:4] == ["-P", "-m", "rigcheck.engine.fleet.launcher"]  # torchrun, one line on a signal
    assert {"--nnodes=4", "--nproc-per-node=1", "--rdzv-backend=c10d", "--rdzv-endpoint=node0:29400"} <= set(argv)
    assert "--rdzv-id=b7" in argv and "--rdzv-conf=is_host=0" in argv
    assert argv[argv.index("-m", 4) :] == ["-m", "rigcheck.fleet", "probe", "-v"]
    for endpoint in ("node0", "node0:abc", "node0:99999", ":29400"):
        assert main(["fleet", "--nnodes", "2", "--endpoint", endpoint, "probe"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "HOST:PORT" in err


def test_two_agents_with_one_host_name_stay_apart(tmp_path: Path) -> None:
    channels, store, run_id, collector = fleet_of(tmp_path, 2)
    for ch in channels:
        ch.announce({"name": "gpu-node"})
        ch.publish(Measurement("matmul", "matmul fp32 1024", 1.0, "GFLOP/s", device="cpu"))
    collector.poll()
    report = store.report(run_id)
    assert report is not None
    assert report["fleet"]["hosts"] == ["gpu-node", "gpu-node (rank 1)"]
    assert sorted(m["host"] for m in report["measurements"]) == ["gpu-node", "gpu-node (rank 1)"]


def test_an_agent_started_otherwise_than_rank_0_is_a_warn_on_its_host(tmp_path: Path) -> None:
    channels, store, run_id, collector = fleet_of(tmp_path, 3)
    channels[0].announce({"name": "a", "stages": ["probe", "matmul"], "profile": "quick"})
    channels[1].announce({"name": "b", "stages": ["probe", "matmul"], "profile": "quick"})
    channels[2].announce({"name": "c", "stages": ["probe"], "profile": "standard"})
    collector.poll()
    report = store.report(run_id)
    assert report is not None
    [warn] = [v for v in report["verdicts"] if v["check_name"] == "fleet-options"]
    assert warn["host"] == "c" and warn["status"] == "WARN"
    assert "'standard'" in warn["explanation"] and "rank 0 (a)" in warn["explanation"]


def test_rank_0_giving_up_names_every_host_still_running(tmp_path: Path) -> None:
    channels, store, run_id, collector = fleet_of(tmp_path, 2)
    for rank, name in enumerate("ab"):
        channels[rank].announce({"name": name})
    channels[1].publish(StageStarted("training", "cpu", 1, "python3"))
    channels[0].finish({"exit_code": 0})
    collector.poll()
    collector.give_up("rank 0 stopped waiting after 5 s (--phase-timeout)")
    report = store.report(run_id)
    assert report is not None
    [late] = [v for v in report["verdicts"] if v["check_name"] == "agent"]
    assert (late["host"], late["status"]) == ("b", "TIMEOUT") and "training started" in late["explanation"]
    assert report["fleet"]["states"] == {"a": "done", "b": "lost"}


def test_a_heartbeat_rides_out_a_slow_answer_and_stops_when_the_store_is_gone() -> None:
    from rigcheck.engine.fleet.channel import GIVE_UP_AFTER, Heartbeat

    class Flaky(MemoryStore):
        def __init__(self, failures: int) -> None:
            super().__init__()
            self.failures, self.calls = failures, 0

        def set(self, key: str, value: str) -> None:
            self.calls += 1
            if self.calls <= self.failures:
                raise RuntimeError("timed out")
            super().set(key, value)

    slow = Flaky(2)
    beat = Heartbeat(channel(slow, 0, 1), interval=0.01).start()
    time.sleep(0.2)
    beat.stop()
    assert channel(slow, 0, 1)._get("hb/0")["beat"] > 2  # it went on beating after two failures
    gone = Flaky(10**6)
    beat = Heartbeat(channel(gone, 0, 1), interval=0.01).start()
    time.sleep(0.3)
    assert gone.calls == GIVE_UP_AFTER and "hb/0" not in gone.data
    beat.stop()


def test_bad_waits_are_refused_with_one_line() -> None:
    import argparse

    from rigcheck.engine.fleet.main import fleet_options
    from rigcheck.engine.run.preflight import UsageError

    good = {"join_timeout": 300.0, "lost_after": 30.0, "phase_timeout": 60.0, "collective_timeout": 60.0}
    assert fleet_options(argparse.Namespace(**good, no_links=False)).lost_after == 30.0
    for flag, value in (("lost_after", -1.0), ("join_timeout", float("inf")), ("phase_timeout", float("nan"))):
        with pytest.raises(UsageError, match=flag.replace("_", "-")):
            fleet_options(argparse.Namespace(**(good | {flag: value}), no_links=False))


def test_a_fleet_event_lands_in_the_hosts_own_run_even_when_rank_0_is_gone(tmp_path: Path) -> None:
    from rigcheck.engine.fleet.agent import Agent, FleetOptions
    from rigcheck.engine.fleet.env import FleetEnv
    from rigcheck.engine.run.request import RunRequest

    class Gone(MemoryStore):
        def compare_set(self, key: str, expected: str, desired: str) -> bytes:
            raise RuntimeError("Broken pipe")

    store = Store(tmp_path / "s.db")
    env = FleetEnv(1, 2, "127.0.0.1", 1, "r", "b", False, "torchrun")
    agent = Agent(env, store, RunRequest(()), FleetOptions(), KEY)
    agent.local_run_id = store.begin_run(["probe"], "cpu", "quick", "python3", [])
    gone = channel(Gone(), 1, 2)
    agent._send(gone, Measurement("fleet-links", "pair all_reduce 4 MiB a-b", 1.0, "GB/s", device="cpu"))
    report = store.report(agent.local_run_id)
    assert report is not None and [m["name"] for m in report["measurements"]] == ["pair all_reduce 4 MiB a-b"]
    assert gone.broken is not None and "Broken pipe" in gone.broken


def test_rank_0_keeps_one_deadline_for_the_collectives_and_goes_on_without_a_late_host(tmp_path: Path) -> None:
    shared = MemoryStore()
    channels = [channel(shared, rank, 3) for rank in range(3)]
    store = Store(tmp_path / "s.db")
    run_id = store.begin_fleet_run(["training"], "quick", "python3", [], {"id": "t"})
    collector = Collector(store, run_id, channels[0], {"id": "t"}, 30.0, 30.0, phase_timeout=0.2)
    collector.open_phase("links")
    for rank in range(3):
        channels[rank].announce({"name": "abc"[rank]})
    for rank in (0, 1):
        channels[rank].arrive("links")
    collector.poll()
    assert channels[0].members("links") is None  # c is alive and still at its stages
    time.sleep(0.3)
    channels[2].beat()
    collector.poll()
    assert channels[2].members("links") == [0, 1]
    report = store.report(run_id)
    assert report is not None and report["fleet"]["states"]["c"] == "running"  # late, not lost
