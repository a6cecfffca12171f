"""Rank 0 trusts nothing on the fleet's store: values without the fleet key, malformed events, huge values and
counters, overwritten slots and terminal escapes are dropped or made inert, counted, and the run goes on.
Against an in-memory store; tests/e2e/test_fleet_rogue.py does the same with torchrun and a real rogue client."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from fleet_memory import KEY, RUN, MemoryStore, channel
from rigcheck.engine.events import LogLine, Measurement, StageFinished, StageStarted, Status, Verdict, event_to_dict
from rigcheck.engine.fleet import schema
from rigcheck.engine.fleet.collector import READS_PER_POLL, Collector, describe
from rigcheck.engine.fleet.seal import FleetKeyError, seal, take_key
from rigcheck.engine.store import Store

ESC = "\x1b[2J\x1b]0;pwned\x07\x1b[31m"


def fleet_of(tmp_path: Path, world: int = 2, **waits: float):
    shared = MemoryStore()
    channels = [channel(shared, rank, world) for rank in range(world)]
    store = Store(tmp_path / "s.db")
    run_id = store.begin_fleet_run(["probe"], "quick", "python3", [], {"id": RUN})
    collector = Collector(store, run_id, channels[0], {"id": RUN}, waits.get("join", 30.0), waits.get("lost", 30.0))
    for rank, name in enumerate("ab"[:world]):
        channels[rank].announce({"name": name, "devices": ["cpu"], "stages": ["probe"], "profile": "quick"})
    return shared, channels, store, run_id, collector


def ended(store: Store, run_id: int, collector: Collector) -> dict:
    collector.record_dropped()
    report = store.report(run_id)
    assert report is not None
    return report


def logs(store: Store, run_id: int, host: str) -> list[str]:
    with sqlite3.connect(store.path) as db:
        rows = db.execute(
            "SELECT payload FROM events WHERE run_id = ? AND kind = 'LogLine' AND host = ?", (run_id, host)
        )
        return [json.loads(payload)["text"] for (payload,) in rows]


def dropped_on(report: dict, host: str) -> dict:
    [verdict] = [v for v in report["verdicts"] if v["check_name"] == "fleet-channel" and v["host"] == host]
    assert verdict["status"] == "WARN"
    return verdict


def test_an_event_without_the_key_is_dropped_and_counted_as_a_warn_on_its_host(tmp_path: Path) -> None:
    shared, channels, store, run_id, collector = fleet_of(tmp_path)
    rogue = channel(shared, 1, 2, key=b"not the fleet key at all")
    rogue.publish(Verdict("probe", "sweep", Status.PASS, "forged"))
    rogue.publish(Measurement("matmul", "matmul bf16 4096", 1e5, "TFLOP/s", device="cuda:0"))
    channels[1].publish(Measurement("probe", "real", 1.0, "GB/s", device="cpu"))
    unsealed = {"seq": 9, "event": event_to_dict(Verdict("probe", "x", Status.PASS, "no seal"))}
    shared.set("ev/1/9", json.dumps(unsealed))  # a plain event, as before the key existed
    shared.set("ev/1/10", json.dumps({"p": json.dumps(unsealed), "m": "0" * 64}))
    collector.poll()
    report = ended(store, run_id, collector)
    assert [(m["host"], m["name"]) for m in report["measurements"]] == [("b", "real")]
    assert not [v for v in report["verdicts"] if v["check_name"] in ("sweep", "x")]
    warn = dropped_on(report, "b")
    assert warn["numbers"]["forged"] == 3 and "fleet key" in warn["explanation"]
    assert dropped_on(report, "(unknown)")["numbers"]["unreadable"] == 1  # no seal at all: sender unknown


def test_a_value_sealed_for_another_slot_or_run_fails(tmp_path: Path) -> None:
    shared, channels, store, run_id, collector = fleet_of(tmp_path)
    channels[1].publish(LogLine("probe", "real one"))
    shared.set("ev/1/1", shared.data["ev/1/0"])  # replayed into the next slot
    shared.set("ev/1/2", seal(KEY, "another-run", "ev/1/2", {"seq": 1, "event": event_to_dict(LogLine("p", "x"))}))
    collector.poll()
    report = ended(store, run_id, collector)
    assert logs(store, run_id, "b") == ["real one"]
    assert dropped_on(report, "b")["numbers"]["forged"] == 2


@pytest.mark.parametrize(
    "body",
    [
        [],
        {"seq": 0, "event": {"kind": "Verdict", "status": "NOPE"}},
        {"seq": 0, "event": {"kind": "Nope", "t": 1.0}},
        {"seq": 0, "event": {**event_to_dict(Measurement("m", "n", 1.0, "u")), "value": "fast"}},
        {"seq": 0, "event": {**event_to_dict(LogLine("m", "n")), "text": "x" * 100_000}},
        {"seq": 0, "event": {**event_to_dict(Verdict("m", "c", Status.PASS, "e")), "t": -5.0}},
        {"seq": 0, "event": {**event_to_dict(Measurement("m", "n", 1.0, "u")), "extra": 1}},
        {"seq": 0, "event": {**event_to_dict(Measurement("m", "n", 1.0, "u")), "params": {"a": [[[[[[[[[[1]]]]]]]]]]}}},
        {"seq": 10**18, "event": event_to_dict(LogLine("m", "n"))},
    ],
)
def test_a_malformed_event_is_skipped_and_counted_and_the_next_one_is_stored(tmp_path: Path, body: object) -> None:
    shared, channels, store, run_id, collector = fleet_of(tmp_path)
    shared.set("ev/1/0", seal(KEY, RUN, "ev/1/0", body))  # sealed with the key: a broken agent, not a forger
    channels[1]._slot = 1
    channels[1].publish(StageFinished("probe", Status.PASS))
    channels[1].finish({"exit_code": 0})
    collector.poll()
    report = ended(store, run_id, collector)
    assert [(s["host"], s["status"]) for s in report["stages"]] == [("b", "PASS")]
    assert dropped_on(report, "b")["numbers"]["malformed"] == 1
    assert report["fleet"]["states"]["b"] == "done"


def test_nan_and_a_huge_value_are_refused_before_they_are_read_as_numbers(tmp_path: Path) -> None:
    shared, _channels, store, run_id, collector = fleet_of(tmp_path)
    nan = seal(KEY, RUN, "ev/1/0", {"seq": 0, "event": event_to_dict(LogLine("p", "x"))}).replace(
        '\\"t\\":', '\\"t\\":NaN,\\"u\\":'
    )
    shared.set("ev/1/0", nan)
    shared.set("ev/1/1", "x" * (5 << 20))
    collector.poll()
    report = ended(store, run_id, collector)
    assert not logs(store, run_id, "b")
    assert dropped_on(report, "b")["numbers"]["forged"] == 1  # the text changed, so its seal no longer holds
    assert dropped_on(report, "(unknown)")["numbers"]["unreadable"] == 1


def test_huge_counters_and_a_flood_cannot_hold_rank_0(tmp_path: Path) -> None:
    shared, channels, store, run_id, collector = fleet_of(tmp_path, lost=0.5)
    shared.add("evn/1", 10**18)  # the counter the first version trusted
    shared.set("hb/1", json.dumps({"p": json.dumps({"beat": 10**18}), "m": "0" * 64}))
    for n in range(READS_PER_POLL * 3):
        shared.set(f"ev/1/{n}", "junk")
    calls = shared.calls
    started = time.monotonic()
    collector.poll()
    assert time.monotonic() - started < 30
    assert shared.calls - calls < READS_PER_POLL * 3  # a bounded number of reads for one poll
    for _ in range(4):
        collector.poll()
    channels[1].publish(LogLine("probe", "after the flood"))  # the agent skips the slots the junk took
    channels[1].beat()
    channels[1].finish({"exit_code": 0})
    for _ in range(3):
        collector.poll()
    report = ended(store, run_id, collector)
    assert logs(store, run_id, "b") == ["after the flood"]
    assert report["fleet"]["states"]["b"] == "done"
    assert dropped_on(report, "(unknown)")["numbers"]["unreadable"] == READS_PER_POLL * 3


def test_a_forged_heartbeat_does_not_keep_a_silent_host_alive(tmp_path: Path) -> None:
    shared, channels, store, run_id, collector = fleet_of(tmp_path, lost=0.3)
    channels[1].beat()
    collector.poll()
    forger = channel(shared, 1, 2, key=b"x" * 32)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        forger._beats = 10**6 + int(time.monotonic() * 1000)
        forger.beat()
        channels[0].beat()
        collector.poll()
        if collector.hosts[1].state == "lost":
            break
        time.sleep(0.05)
    report = ended(store, run_id, collector)
    assert report["fleet"]["states"]["b"] == "lost"
    assert dropped_on(report, "b")["numbers"]["forged"] >= 2


def test_a_slot_taken_first_is_passed_over_and_one_overwritten_is_counted(tmp_path: Path) -> None:
    shared, channels, store, run_id, collector = fleet_of(tmp_path)
    shared.set("ev/1/0", "squatter")
    channels[1].publish(LogLine("probe", "one"))  # lands in slot 1, not over the squatter
    channels[1].publish(LogLine("probe", "two"))
    shared.set("ev/1/2", "overwriter")  # after the agent wrote it, before rank 0 read it
    channels[1].publish(LogLine("probe", "three"))
    channels[1].finish({"exit_code": 0, "run_id": 4, "store": "/b/s.db"})
    collector.poll()
    report = ended(store, run_id, collector)
    assert logs(store, run_id, "b") == ["one", "three"]
    warn = dropped_on(report, "b")
    assert warn["numbers"]["overwritten"] == 1 and "run 4 of /b/s.db on b" in warn["explanation"]


def test_text_from_peers_is_inert_everywhere_it_is_stored(tmp_path: Path) -> None:
    _shared, channels, store, run_id, collector = fleet_of(tmp_path, world=1)
    channels[0].announce({"name": f"a{ESC}\r\n", "devices": ["cpu"]})
    channels[0].publish(LogLine("probe", f"line {ESC}one\r\x08\x9b2Jtwo\u202e\nnext"))
    channels[0].publish(Verdict("probe", f"c{ESC}", Status.WARN, f"why {ESC}", {f"k{ESC}": f"v{ESC}"}))
    channels[0].publish(Measurement("probe", f"fig{ESC}", 1.0, "u\x1b[0m", params={"p": ["\x07x"]}))
    collector.poll()
    text = json.dumps([ended(store, run_id, collector), logs(store, run_id, "a")], default=str)
    for bad in ("\\u001b", "\\r", "\\u0007", "\\b", "\\u009b", "\\u202e", "pwned"):
        assert bad not in text, bad
    assert "line onetwo\\nnext" in text and '"a"' in text
    assert schema.inert("ok\tfine\n", lines=True) == "ok\tfine\n" and schema.inert("ok\tfine\n") == "okfine"


def test_an_agent_without_a_key_is_refused_and_a_short_key_too() -> None:
    with pytest.raises(FleetKeyError, match="RIGCHECK_FLEET_KEY"):
        take_key({})
    with pytest.raises(FleetKeyError, match="fewer than 128"):
        take_key({"RIGCHECK_FLEET_KEY": "abc"})
    good = "0123456789abcdef" * 2
    env = {"RIGCHECK_FLEET_KEY": good}
    assert take_key(env) == good.encode() and "RIGCHECK_FLEET_KEY" not in env  # no stage child inherits it


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        (" " * 16, "not hex or base64"),
        ("é" * 16, "not hex or base64"),
        ("0123456789abcdef0123456789abcde", "fewer than 128"),  # 31 hex digits: 124 bits
        ("s" * 40, "repeats too few"),
        ("0" * 64, "repeats too few"),
        ("abc def ghi jkl mno pqr", "not hex or base64"),
    ],
)
def test_a_weak_key_is_refused_saying_how_to_make_one(key: str, problem: str) -> None:
    with pytest.raises(FleetKeyError, match=problem) as refused:
        take_key({"RIGCHECK_FLEET_KEY": key})
    assert "secrets.token_hex(32)" in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    "key", ["0123456789abcdef" * 2, "0123456789abcdef" * 4, "q2Vs9+ZkR/1mT0wXy8aB3c==", "AbCdEf01234_-xyzUVWqrs"]
)
def test_a_key_of_128_bits_or_more_in_hex_or_base64_passes(key: str) -> None:
    assert take_key({"RIGCHECK_FLEET_KEY": key}) == key.encode()


def test_a_refusal_is_quoted_at_once_rather_than_waited_for(tmp_path: Path) -> None:
    shared, channels, store, run_id, collector = fleet_of(tmp_path, world=3)
    channels[2].refuse("bad profile 'fast': use one of quick, standard, long", "c\x1b[2J")
    collector.poll()
    report = ended(store, run_id, collector)
    [refused] = [v for v in report["verdicts"] if v["check_name"] == "agent"]
    assert refused["host"] == "c" and "refused to start: bad profile 'fast'" in refused["explanation"]
    assert report["fleet"]["states"]["c"] == "lost"
    forged = channel(shared, 1, 3, key=b"z" * 32)
    forged.refuse("forged", "b")  # a refusal without the key does not stop a host
    collector.poll()
    assert collector.hosts[1].state == "running"


def test_a_lost_hosts_last_event_says_elapsed_time_not_epoch_seconds() -> None:
    began = 1796131000.0
    figure = Measurement("matmul", "matmul fp32 4096", 1.0, "TFLOP/s", t=began + 14)
    assert describe(figure, began) == "matmul: figure matmul fp32 4096 14 s into its run"
    assert "1796131" not in describe(StageStarted("matmul", "cpu", 1, "p", t=began + 200), began)
    assert describe(figure) == "matmul: figure matmul fp32 4096"


def test_rank_0s_phase_decision_and_announcement_need_the_key(tmp_path: Path) -> None:
    shared, channels, _store, _run_id, _collector = fleet_of(tmp_path)
    channel(shared, 0, 2, key=b"q" * 32).set_members("links", [1])
    assert channels[1].members("links") is None  # forged: no decision yet
    shared.set("host/0", seal(KEY, RUN, "host/0", {"name": "a", "collective_timeout": 1e12}))
    assert channels[1].host(0) is None  # a wait beyond bounds is no announcement
    channels[0].set_members("links", [0, 1])
    assert channels[1].members("links") == [0, 1]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--nnodes", "0"], "--nnodes"),
        (["--nnodes", "-1"], "--nnodes"),
        (["--nnodes", "abc"], "--nnodes"),
        (["--nnodes", "99999999999999999999"], "--nnodes"),
        (["--nnodes", "1", "nosuchstage"], "nosuchstage"),
        (["--nnodes", "1", "probe", "--profile", "fast"], "profile"),
        (["--nnodes", "1", "probe", "--device", "tpu:0"], "tpu"),
        (["--nnodes", "1", "probe", "--lost-after", "nan"], "lost-after"),
        (["--nnodes", "1", "probe", "--bogus-flag"], "bogus"),
        (["--nnodes", "1", "probe", "--detach"], "detach"),
        (["--nnodes", "1", "probe", "--store", "/no/such/folder/s.db"], "does not exist"),
        (["--nnodes", "2", "probe"], "RIGCHECK_FLEET_KEY"),
    ],
)
def test_bad_input_to_rigcheck_fleet_is_one_line_before_torchrun_starts(
    argv: list[str], said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from rigcheck.tui import cli_fleet
    from rigcheck.tui.cli import main

    def no_torchrun(*args: object, **kwargs: object) -> None:
        raise AssertionError("torchrun started")

    monkeypatch.setattr(cli_fleet, "start_torchrun", no_torchrun)
    monkeypatch.delenv("RIGCHECK_FLEET_KEY", raising=False)
    assert main(["fleet", "--endpoint", "127.0.0.1:29400", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err and "Traceback" not in err, err


def test_rigcheck_fleet_makes_a_key_for_one_host_and_keeps_the_users(tmp_path: Path) -> None:
    import argparse

    from rigcheck.tui.cli_fleet import agent_code, agent_env, fleet_key

    one, four = argparse.Namespace(nnodes=1), argparse.Namespace(nnodes=4)
    assert len(fleet_key(one, {})) == 64 and fleet_key(one, {}) != fleet_key(one, {})
    assert fleet_key(four, {"RIGCHECK_FLEET_KEY": "0123456789abcdef" * 2}) == "0123456789abcdef" * 2
    env = agent_env("k" * 64, tmp_path / "exit")
    assert env["RIGCHECK_FLEET_KEY"] == "k" * 64 and env["PYTHONSAFEPATH"] == "1"
    assert "" not in env.get("PYTHONPATH", "x").split(":")
    (tmp_path / "exit").write_text("3\n")
    assert agent_code(tmp_path / "exit", 1) == 3  # the agent's code, not torchrun's 1
    assert agent_code(tmp_path / "none", 1) == 1 and agent_code(tmp_path / "none", -9) == 137


def test_rank_0s_prometheus_labels_name_it_as_the_fleet_does(tmp_path: Path) -> None:
    from rigcheck.engine.report.prom import report_to_prom

    store = Store(tmp_path / "s.db")
    run_id = store.begin_fleet_run(["probe"], "quick", "python3", [], {"id": "f", "rank0": "host-a"})
    store.record(run_id, Verdict("fleet", "fleet-peers", Status.PASS, "fleet-wide"), host="")
    report = store.report(run_id)
    assert report is not None
    lines = [line for line in report_to_prom(report).splitlines() if line.startswith("rigcheck_run_info")]
    lines += [line for line in report_to_prom(report).splitlines() if "fleet-peers" in line]
    assert lines and all('="host-a"' in line for line in lines), lines


def test_a_workers_progress_from_the_store_is_bounded_and_inert() -> None:
    from rigcheck.engine.fleet.progress import checked

    good = checked(json.dumps({"n": 3, "kind": "begin", "step": f"all_reduce {ESC}16 MiB", "t": 1.0}).encode())
    assert good is not None and good["n"] == 3 and good["step"] == "all_reduce 16 MiB"
    for bad in (b"[]", b'{"n": 1e400}', b'{"n": "7"}', b'{"n": -1}', b"x" * 10_000, b"\xff", b'{"n": NaN}'):
        assert checked(bad) is None, bad


def test_a_deleted_slot_does_not_stall_the_host_behind_it(tmp_path: Path) -> None:
    shared, channels, store, run_id, collector = fleet_of(tmp_path)
    for text in ("one", "two", "three"):
        channels[1].publish(LogLine("probe", text))
    del shared.data["ev/1/1"]  # someone deleted it before rank 0 read it
    collector.poll()
    assert logs(store, run_id, "b") == ["one", "three"]
    channels[1].publish(LogLine("probe", "four"))
    collector.poll()
    assert logs(store, run_id, "b") == ["one", "three", "four"]
    assert collector.dropped[1].overwritten == 1
