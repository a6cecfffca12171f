"""Issue 44.3: a peer without the fleet key kept a host out of the fleet by deleting its ask or rank 0's answer as
they appeared, writing back an answer recorded in an earlier run, or 4 MiB of junk in its ask. Rank 0 called the
host one that "never joined", and the host's own store said nothing. Now both count it as tampering and name it;
a host that is simply never answered (or never asks) is told apart."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fleet_memory import KEY, RUN, MemoryStore, channel
from rigcheck.engine.fleet import agent as agent_module
from rigcheck.engine.fleet.agent import Agent, FleetOptions
from rigcheck.engine.fleet.env import FleetEnv
from rigcheck.engine.fleet.handshake import NoNonce, join
from rigcheck.engine.fleet.seal import new_nonce, seal
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.store import Store
from test_fleet_replay import joined
from test_fleet_tamper import fleet, until_lost, verdicts

ASK = {"c": "ef" * 16}


def kept_out(tmp_path: Path, attack) -> dict:  # type: ignore[no-untyped-def]
    shared, channels, store, run_id, collector = fleet(tmp_path, join=3.0)
    channels[1].put("ask/1", ASK, "")

    def agent_asks_and_she_attacks() -> None:
        if "ask/1" not in shared.data:
            channels[1].put("ask/1", ASK, "")
        attack(shared)

    until_lost(collector, agent_asks_and_she_attacks)
    return verdicts(store, run_id, collector, "rank 1")


def test_rank_0s_answer_deleted_as_it_appears_is_tampering(tmp_path: Path) -> None:
    found = kept_out(tmp_path, lambda shared: shared.data.pop("nonce/1", None))
    assert "agent" not in found, found
    text = found["fleet-store"]["explanation"]
    assert text.startswith("the fleet store was tampered with: rank 0's answer nonce/1 to its request vanished")
    assert found["fleet-store"]["numbers"]["tampered"] >= 1


def test_an_earlier_runs_answer_written_over_rank_0s_is_tampering(tmp_path: Path) -> None:
    recorded = seal(KEY, RUN, "nonce/1", {"c": "ab" * 16, "nonce": "cd" * 16}).encode()
    found = kept_out(tmp_path, lambda shared: shared.data.__setitem__("nonce/1", recorded))
    assert "held an answer to another challenge" in found["fleet-store"]["explanation"]


def test_four_mib_of_junk_in_its_ask_is_tampering(tmp_path: Path) -> None:
    found = kept_out(tmp_path, lambda shared: shared.data.__setitem__("ask/1", b"x" * (4 << 20)))
    text = found["fleet-store"]["explanation"]
    assert "ask/1 was replaced by a value that does not pass (unreadable)" in text


def test_a_host_that_never_asks_is_still_one_that_never_joined(tmp_path: Path) -> None:
    _shared, _channels, store, run_id, collector = fleet(tmp_path, join=1.0)
    until_lost(collector, lambda: None)
    found = verdicts(store, run_id, collector, "rank 1")
    assert "fleet-store" not in found and "never joined" in found["agent"]["explanation"]


def test_an_untouched_handshake_counts_nothing(tmp_path: Path) -> None:
    _shared, channels, _store, _run_id, collector = fleet(tmp_path)
    channels[0].nonce = new_nonce()
    joined(channels[1], collector, timeout=20.0)
    assert channels[1].nonce == channels[0].nonce and collector.hosts[1].tamper == []


class DeletesAsks(MemoryStore):
    """Someone on the store deletes the agent's ask the moment it is written."""

    def set(self, key: str, value: str | bytes) -> None:
        if not key.startswith("ask/"):
            super().set(key, value)


def test_the_agent_kept_out_says_so_itself_and_in_its_own_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(NoNonce, match=r"tampered with \(1 sign\(s\): its request for the run's nonce ask/1 vani"):
        join(channel(DeletesAsks(), 1, 2), 2.5, poll=0.05)
    with pytest.raises(NoNonce, match=r"rank 0 did not answer within 0\.3 s") as clean:
        join(channel(MemoryStore(), 1, 2), 0.3, poll=0.05)  # nobody answers, nobody tampers
    assert clean.value.signs == 0

    monkeypatch.setattr(agent_module, "connect", lambda env, timeout: DeletesAsks())
    store = Store(tmp_path / "b.db")
    env = FleetEnv(1, 2, "127.0.0.1", 1, RUN, "b", False, "torchrun")
    agent = Agent(env, store, RunRequest(()), FleetOptions(join_timeout=2.5), KEY)
    said: list[str] = []
    agent.say = said.append
    agent.run()
    report = store.report(agent.local_run_id)  # type: ignore[arg-type]
    assert report is not None
    [kept] = [v for v in report["verdicts"] if v["stage"] == "fleet"]
    assert kept["check_name"] == "fleet-store" and kept["status"] == "SKIP" and kept["numbers"]["tampered"] == 1
    assert kept["explanation"].startswith("this host ran alone, kept out of the fleet run: the fleet store was tamp")
    assert "results are whole" in said[-1] and "tampered with" in said[-1]


def test_an_ask_deleted_before_rank_0_ever_saw_it_is_tampering_the_agent_reports(tmp_path: Path) -> None:
    """Rank 0 cannot see an ask deleted the moment it is written; the agent can, and reports it beside its ask
    (sealed, with its challenge): rank 0 counts it, and answers that challenge there too."""
    shared = DeletesAsks()
    _shared, channels, store, run_id, collector = fleet(tmp_path, shared=shared, join=4.0)
    channels[0].nonce = new_nonce()
    agent = channel(shared, 1, 2)
    failed: list[BaseException] = []

    def ask() -> None:
        try:
            join(agent, 8.0, poll=0.02)
        except BaseException as error:  # handed to the test thread
            failed.append(error)

    asking = threading.Thread(target=ask)
    asking.start()
    while asking.is_alive():
        collector.poll()
        asking.join(0.02)
    # rank 0 answered the challenge the agent reported, so the agent that was kept out of its ask still got in
    assert not failed and agent.nonce == channels[0].nonce, failed
    assert (
        collector.hosts[1].tamper
        and "its agent saw its request for the run's nonce tampered with (its request"
        in (collector.hosts[1].tamper[-1])
    )
    assert store.report(run_id) is not None


def test_a_host_kept_out_and_then_stopped_by_torchrun_never_says_the_user_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torchrun stops its other workers with SIGTERM once rank 0 has ended: the host kept out, still running alone,
    once stored its stopped stage as "cancelled by the user" and the rest as "the run was cancelled"."""
    import os
    import signal

    from rigcheck.engine.fleet.main import stop_on_sigterm
    from stage_infos import fake

    monkeypatch.setattr(agent_module, "connect", lambda env, timeout: DeletesAsks())
    store = Store(tmp_path / "b.db")
    env = FleetEnv(1, 2, "127.0.0.1", 1, RUN, "b", False, "torchrun")
    waits = fake("waits", "polite_wait", timeout=120)
    request = RunRequest((waits, fake("ok")), "cpu", "quick", telemetry=False)
    agent = Agent(env, store, request, FleetOptions(join_timeout=2.5), KEY)
    said: list[str] = []
    agent.say = said.append

    def torchrun_stops_it() -> None:  # once its stage runs, as rank 0's end reaches this host's torchrun
        while agent.local_run_id is None or not [
            r for r in store.stage_rows(agent.local_run_id) if r["name"] == "waits" and r["status"] == "running"
        ]:
            threading.Event().wait(0.05)
        os.kill(os.getpid(), signal.SIGTERM)

    before = signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        threading.Thread(target=torchrun_stops_it, daemon=True).start()
        code = agent.run()
    finally:
        signal.signal(signal.SIGTERM, before)
    assert code == 130
    report = store.report(agent.local_run_id)  # type: ignore[arg-type]
    assert report is not None
    told = {v["stage"]: v["explanation"] for v in report["verdicts"]}
    assert told["fleet"].startswith("this host ran alone, kept out of the fleet run: the fleet store was tampered")
    assert "user" not in told["waits"] and told["waits"].startswith("stopped by SIGTERM from the launcher"), told
    assert told["ok"].startswith("not run: stopped by SIGTERM from the launcher"), told
    assert "results up to its stop are in its own store" in said[-1] and "tampered with" in said[-1]
