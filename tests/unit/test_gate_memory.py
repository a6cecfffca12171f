"""The gate's memory across checks is a bonus, never a precondition (issue 44), and a bounded timeline rather than
a run per check (issue 43): a tampered or damaged history still gives the answer, identical checks are pruned to
the first and last of each stretch, and the gate's metrics keep one series per host and GPU."""

from __future__ import annotations

import json
import os
import socket
import sqlite3

import pytest
from gate_fakes import Node, gate_library_fixture, node_fixture  # noqa: F401 - fixtures
from rigcheck.engine.events import Status
from rigcheck.engine.gate import keep
from rigcheck.engine.gate.outcome import CRITICAL, OK, UNKNOWN, WARN
from rigcheck.engine.report.prom import report_to_prom
from rigcheck.engine.store.history import checks, real_runs

HOST = socket.gethostname()
NOT_HERE = 4_194_400  # above the kernel's largest pid_max (2^22): in no PID namespace of this machine


def tamper(node: Node, run_id: int, change) -> None:  # type: ignore[no-untyped-def]
    db = sqlite3.connect(node.store.path)
    (data,) = db.execute("SELECT data FROM facts WHERE run_id = ? AND stage = 'health'", (run_id,)).fetchone()
    facts = json.loads(data)
    change(facts)
    db.execute("UPDATE facts SET data = ? WHERE run_id = ?", (json.dumps(facts), run_id))
    db.commit()
    db.close()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "12", None, [1]])
def test_a_tampered_counter_in_the_history_costs_the_history_not_the_answer(node: Node, bad: object) -> None:
    first = node.check(expect=2)

    def poison(facts: dict) -> None:
        for gpu in facts["gpus"]:
            gpu["row_remap"]["correctable"] = bad
            gpu["ecc"]["aggregate_corrected"] = bad
            gpu["xid"] = {"codes": {"NaN": 1, "13": 1}}
        facts["kmsg"]["last_seq"] = bad

    tamper(node, first.run_id, poison)
    node.faults(remap_failure1=1)
    result = node.check(expect=2)
    assert result.state == CRITICAL and result.line == "CRITICAL: nvml:1 row remap failed"
    node.faults()
    assert node.check(expect=2).state == OK  # the clean case after it: nothing left over


def test_a_store_that_cannot_be_read_at_all_still_gets_an_answer(node: Node) -> None:
    from rigcheck.engine.gate.passive import passive_check
    from rigcheck.engine.gate.read import read_node

    class Damaged:
        def _read(self, *args: object) -> list:
            raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

        def begin_run(self, *args: object) -> int:
            raise UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte")

    node.faults(remap_failure1=1)
    reading = read_node(node.log, drm_root=node.folder / "drm", pci_root=node.folder / "pci")
    result = passive_check(Damaged(), 2, reading=reading)
    assert result.state == CRITICAL and result.run_id is None
    assert result.store_error is not None and result.store_error.startswith("not stored")


def test_identical_checks_keep_the_first_and_last_of_each_stretch(node: Node) -> None:
    ids = [node.check(expect=2).run_id for _ in range(4)]
    node.faults(persistence1=0)
    ids += [node.check(expect=2).run_id for _ in range(3)]
    node.faults()
    ids.append(node.check(expect=2).run_id)
    kept = [row["id"] for row in checks(node.store, 100)][::-1]
    assert kept == [ids[0], ids[3], ids[4], ids[6], ids[7]]
    states = [row["state"] for row in checks(node.store, 100)][::-1]
    assert states == [OK, OK, WARN, WARN, OK]


def test_the_timeline_is_bounded(node: Node, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keep, "MAX_CHECKS", 3)
    ids = []
    for persistence in (1, 0, 1, 0, 1):  # each differs from the one before: none pruned as a repeat
        node.faults(persistence1=persistence)
        ids.append(node.check(expect=2).run_id)
    assert [row["id"] for row in checks(node.store, 100)] == ids[::-1][:3]
    assert node.store.report(ids[0]) is None or not node.store.report(ids[0])["verdicts"]


def test_history_lists_real_runs_apart_from_checks_with_the_gates_own_state(node: Node) -> None:
    import sys

    real = node.store.begin_run(["matmul"], "cuda:0", "quick", sys.executable, [])
    node.check(expect=2)
    node.faults(init_fail=1)
    node.check(expect=2)
    node.faults(remap_failure1=1)
    node.check(expect=2)
    assert [run["id"] for run in real_runs(node.store, 30)] == [real]
    assert [row["state"] for row in checks(node.store, 30)] == [CRITICAL, UNKNOWN, OK]  # never SKIP, never FAIL


def test_the_gate_metrics_keep_one_series_across_checks(node: Node) -> None:
    def labels(run_id: int) -> list[str]:
        text = report_to_prom(node.store.report(run_id))
        families = ("rigcheck_gate_state", "rigcheck_health_age_seconds", "rigcheck_health_check")
        return sorted(line.rsplit(" ", 1)[0] for line in text.splitlines() if line.startswith(families))

    node.check(expect=2)  # the first check of a GPU has no history yet: its series set differs
    second = labels(node.check(expect=2).run_id)  # read now: an identical check after it prunes it
    third = labels(node.check(expect=2).run_id)
    assert second == third
    assert [line for line in third if "rigcheck_gate_state" in line] == [f'rigcheck_gate_state{{hostname="{HOST}"}}']


@pytest.mark.parametrize(
    ("faults", "idle", "status"),
    [
        ({}, True, Status.PASS),
        ({"unlisted1": 200}, True, Status.PASS),  # 240 MiB with the driver's 40: its bookkeeping
        ({"unlisted1": 230}, False, Status.WARN),  # 270 MiB: someone holds memory rigcheck cannot place
        ({"unlisted1": 230}, True, Status.FAIL),
        ({"util1": 5}, True, Status.PASS),
        ({"util1": 6}, False, Status.WARN),  # busy with no process of this namespace on it
        ({"util1": 99}, True, Status.FAIL),
        ({"processes1": 1, "pid1": NOT_HERE}, False, Status.WARN),  # a pid of another PID namespace
        ({"processes1": 1, "pid1": NOT_HERE}, True, Status.FAIL),
    ],
)
def test_a_process_rigcheck_cannot_see_is_named(node: Node, faults: dict, idle: bool, status: Status) -> None:
    node.faults(**faults)
    result = node.check(expect=2, idle=idle)
    found = next(v for v in result.verdicts if v.check == "processes" and v.device == "nvml:1")
    assert found.status == status, found.explanation
    clean = next(v for v in result.verdicts if v.check == "processes" and v.device == "nvml:0")
    assert clean.status == Status.PASS
    if status != Status.PASS:
        assert "a process rigcheck cannot see (another container)" in found.explanation
        assert result.state == (CRITICAL if status == Status.FAIL else WARN)


def test_a_busy_gpu_with_its_own_process_visible_is_not_an_unseen_user(node: Node) -> None:
    node.faults(processes1=1, pid1=os.getppid(), util1=99)
    found = next(v for v in node.check(expect=2).verdicts if v.check == "processes" and v.device == "nvml:1")
    assert found.status == Status.PASS


def test_a_pcie_read_that_fails_is_unknown_never_ok(node: Node) -> None:
    node.faults(pcie_fail1=1)
    result = node.check(expect=2)
    assert result.state == UNKNOWN
    assert next(v for v in result.verdicts if v.check == "pcie" and v.device == "nvml:1").status == Status.SKIP
    node.faults(pcie_fail1=0)
    assert node.check(expect=2).state == OK


def test_history_gpu_shows_a_tampered_row_without_a_traceback_or_an_escape(node: Node) -> None:
    from rigcheck.engine.gate.timeline import gpu_timeline

    uuid = "GPU-00000000-0000-0000-0000-000000000001"
    clean = node.check(expect=2)
    node.faults(persistence1=0)
    bad = node.check(expect=2)

    def poison(facts: dict) -> None:
        gpu = facts["gpus"][1]
        gpu["ecc"] = {"aggregate_corrected": float("inf"), "volatile_corrected": float("nan")}
        gpu["row_remap"] = {"correctable": float("inf"), "uncorrectable": 1}
        gpu["xid"] = {"codes": {"13\x1b]0;owned\x07": 1}}

    tamper(node, bad.run_id, poison)
    db = sqlite3.connect(node.store.path)
    db.execute("UPDATE runs SET started = 1e308, profile = 'x\x1b[2J' WHERE id = ?", (bad.run_id,))
    db.commit()
    db.close()
    rows = gpu_timeline(node.store, uuid)
    assert [row["run"] for row in rows] == [clean.run_id, bad.run_id]
    assert rows[0]["corrected"] == "12" and rows[0]["when"] != "-"  # the clean row as before
    assert rows[1]["corrected"] == "-" and rows[1]["remapped"] == "-" and rows[1]["when"] == "-"
    assert all(str(value).isprintable() for row in rows for value in row.values())
