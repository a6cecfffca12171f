"""A fleet run's store: one stage row per host, every row carries its host, and an older store migrates."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rigcheck.engine.events import Facts, Measurement, StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.report.rows import measurement_row, report_rows
from rigcheck.engine.store import Store
from rigcheck.engine.store.schema import MIGRATIONS, SCHEMA_VERSION


def test_the_same_stage_on_two_hosts_is_two_rows_each_with_its_host(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = store.begin_fleet_run(["matmul"], "quick", "python3", [], {"id": "r1", "hosts": ["a", "b"]})
    for host, value in (("a", 100.0), ("b", 60.0)):
        store.record(run_id, StageStarted("matmul", "cpu", 1, "python3"), host=host)
        store.record(run_id, Measurement("matmul", "matmul fp32 1024", value, "GFLOP/s", device="cpu"), host=host)
        store.record(run_id, Verdict("matmul", "limits", Status.PASS, "fine", device="cpu"), host=host)
        store.record(run_id, Facts("probe", {"torch": host}), host=host)
        store.record(run_id, StageFinished("matmul", Status.PASS), host=host)
    report = store.report(run_id)
    assert report is not None
    assert sorted((s["host"], s["status"]) for s in report["stages"]) == [("a", "PASS"), ("b", "PASS")]
    assert {(r["host"], r.get("value")) for r in report_rows(report) if r["kind"] == "measurement"} == {
        ("a", 100.0),
        ("b", 60.0),
    }
    assert report["host_facts"] == {"a": {"probe": {"torch": "a"}}, "b": {"probe": {"torch": "b"}}}
    assert report["fleet"] == {"id": "r1", "hosts": ["a", "b"]}
    assert report["run"]["device"] == "fleet"


def test_a_local_run_keeps_one_row_per_stage_and_an_empty_host(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["matmul"], "cpu", "quick", "python3", [])
    store.record(run_id, StageStarted("matmul", "cpu", 1, "python3"))
    store.record(run_id, StageFinished("matmul", Status.FAIL))
    report = store.report(run_id)
    assert report is not None
    assert [(s["host"], s["status"]) for s in report["stages"]] == [("", "FAIL")]
    assert measurement_row(Measurement("m", "x", 1.0, "s"))["host"] == ""


def test_a_version_3_store_migrates_with_its_stages(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    db = sqlite3.connect(path)
    for version, migration in enumerate(MIGRATIONS[:3]):
        db.executescript(migration)
        db.execute(f"PRAGMA user_version = {version + 1}")
    db.execute("INSERT INTO runs (id, started, status) VALUES (1, 0, 'complete')")
    db.execute("INSERT INTO stages (run_id, name, status) VALUES (1, 'probe', 'PASS')")
    db.commit()
    db.close()
    store = Store(path)
    report = store.report(1)
    assert report is not None
    assert [(s["name"], s["status"], s["host"]) for s in report["stages"]] == [("probe", "PASS", "")]
    assert store._read("PRAGMA user_version")[0][0] == SCHEMA_VERSION


def test_the_latest_probe_is_this_hosts_not_a_fleet_hosts(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    local = store.begin_run(["probe"], "cpu", "quick", "python3", [])
    store.record(local, Facts("probe", {"torch": "here"}))
    fleet = store.begin_fleet_run(["probe"], "quick", "python3", [], {"id": "r1"})
    store.record(fleet, Facts("probe", {"torch": "elsewhere"}), host="b")
    latest = store.latest_probe()
    assert latest is not None and latest[0] == {"torch": "here"}


def test_csv_and_markdown_lead_with_the_host_only_for_a_fleet_run(tmp_path: Path) -> None:
    import csv
    import io

    from rigcheck.engine.report.export import render

    store = Store(tmp_path / "s.db")
    fleet = store.begin_fleet_run(["matmul"], "quick", "python3", [], {"id": "r1", "hosts": ["a", "b"]})
    local = store.begin_run(["matmul"], "cpu", "quick", "python3", [])
    for run_id, host in ((fleet, "a"), (fleet, "b"), (local, "")):
        store.record(run_id, Measurement("matmul", "matmul fp32 1024", 5.0, "GFLOP/s", device="cpu"), host=host)
    fleet_report, local_report = store.report(fleet), store.report(local)
    assert fleet_report is not None and local_report is not None
    rows = list(csv.DictReader(io.StringIO(render(fleet_report, "csv"))))
    assert [r["host"] for r in rows] == ["a", "b"]
    assert "host" not in next(csv.DictReader(io.StringIO(render(local_report, "csv"))))
    assert "| host | stage | figure |" in render(fleet_report, "md") and "| a | matmul |" in render(fleet_report, "md")
    assert "| stage | figure |" in render(local_report, "md") and "| host |" not in render(local_report, "md")
