"""A fleet run's hosts x GPUs cells (worst verdict, key figure, trust, lost hosts) and `rigcheck show` of a fleet."""

from __future__ import annotations

from pathlib import Path

import pytest
from fleet_store import FAILING, GPUS, HOSTS, LOST, SLOW_HOST, bf16, fleet_run
from rigcheck.engine.events import Measurement, StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.report.fleet_view import Cell, HostLine, fleet_cells, fleet_label, grid_devices, host_rows
from rigcheck.engine.store import Store
from rigcheck.tui.cli import main


def cells_by_host(store: Store, run_id: int) -> dict[str, HostLine]:
    report = store.report(run_id)
    assert report is not None
    return {line.host: line for line in fleet_cells(report)}


def cell(line: HostLine, device: str) -> Cell:
    return next(c for c in line.cells if c.device == device)


def small_fleet(store: Store, hosts: list[str], states: dict[str, str] | None = None) -> int:
    fleet = {"id": "f", "hosts": hosts} | ({"states": states} if states else {})
    return store.begin_fleet_run(["matmul"], "quick", "python3", [], fleet)


def figure(store: Store, run_id: int, host: str, name: str, value: float, device: str, trust: str = "TRUSTED") -> None:
    unit = "GFLOP/s" if device == "cpu" else "TFLOP/s"
    m = Measurement("matmul", name, value, unit, 0.1, 5, device, {}, {"trust": trust})
    store.record(run_id, m, host=host)


def test_the_fleet_keeps_rank_order_and_marks_the_fail_and_the_lost_host(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    lines = cells_by_host(store, fleet_run(store))
    assert list(lines) == HOSTS
    assert grid_devices(list(lines.values())) == [f"cuda:{i}" for i in range(GPUS)]
    failing = lines[FAILING]
    assert [c.status for c in failing.cells] == ["PASS"] * 3 + ["FAIL"] + ["PASS"] * 4
    assert failing.worst == "FAIL" and failing.status is None  # a GPU's FAIL is that cell's, not the host's
    assert lines[LOST].lost and not lines[HOSTS[0]].lost
    assert [c.figure is None for c in lines[LOST].cells] == [False] * 4 + [True] * 4  # 8 GPUs by its probe facts
    slow = lines[SLOW_HOST]
    assert slow.status == "WARN" and {c.status for c in slow.cells} == {"PASS"}  # the host-level WARN stays the host's
    index = HOSTS.index(FAILING)
    assert cell(failing, "cuda:3").figure["value"] == bf16(index, 3)  # the best bf16, not 16384 or fp32


def test_a_cell_shows_its_worst_verdict(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = small_fleet(store, ["a"])
    for status in (Status.PASS, Status.WARN, Status.CRASH, Status.FAIL):
        store.record(run_id, Verdict("matmul", status.value, status, "x", device="cuda:0"), host="a")
    store.record(run_id, Verdict("matmul", "other", Status.PASS, "x", device="cuda:1"), host="a")
    a = cells_by_host(store, run_id)["a"]
    assert (cell(a, "cuda:0").status, cell(a, "cuda:1").status) == ("CRASH", "PASS")
    assert cell(a, "cuda:0").verdict["name"] == "CRASH" and a.worst == "CRASH"


def test_the_key_figure_is_the_best_trustworthy_matmul_of_the_devices_kind(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = small_fleet(store, ["gpu", "cpu-only", "other"])
    figure(store, run_id, "gpu", "matmul fp32 4096", 900.0, "cuda:0")  # larger, but not bf16
    figure(store, run_id, "gpu", "matmul bf16 4096", 700.0, "cuda:0")
    figure(store, run_id, "gpu", "matmul bf16 8192", 750.0, "cuda:0", "NOISY")
    figure(store, run_id, "gpu", "matmul bf16 16384", 6554.0, "cuda:0", "BROKEN")  # never a result
    figure(store, run_id, "cpu-only", "matmul bf16 1024", 80.0, "cpu")
    figure(store, run_id, "cpu-only", "matmul fp32 1024", 60.0, "cpu")
    figure(store, run_id, "other", "training board net", 1.5e5, "cuda:0")
    lines = cells_by_host(store, run_id)
    gpu = cell(lines["gpu"], "cuda:0")
    assert (gpu.figure["name"], gpu.trust, gpu.keyed, gpu.value_text()) == ("matmul bf16 8192", "NOISY", True, "750")
    assert [c.device for c in lines["cpu-only"].cells] == ["cpu"]
    assert cell(lines["cpu-only"], "cpu").figure["name"] == "matmul fp32 1024"
    other = cell(lines["other"], "cuda:0")  # no matmul: the first figure, with its unit since the rule did not pick it
    assert not other.keyed and other.value_text() == "1.5e+05 TFLOP/s"


def test_a_host_with_fewer_gpus_has_fewer_cells_and_the_cpu_of_a_gpu_host_is_host_level(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = small_fleet(store, ["big", "small"], {"big": "done", "small": "running"})
    for i in range(4):
        figure(store, run_id, "big", "matmul bf16 4096", 700.0, f"cuda:{i}")
    figure(store, run_id, "small", "matmul bf16 4096", 700.0, "cuda:0")
    store.record(run_id, Verdict("hostbugs", "sgemm race", Status.FAIL, "OpenBLAS races", device="cpu"), host="small")
    lines = cells_by_host(store, run_id)
    assert len(lines["big"].cells) == 4 and len(lines["small"].cells) == 1
    assert lines["small"].status == "FAIL" and cell(lines["small"], "cuda:0").status is None
    assert lines["small"].state == "running"


def test_a_normal_run_has_no_fleet_cells(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["matmul"], "cpu", "quick", "python3", [])
    store.record(run_id, Measurement("matmul", "matmul fp32 1024", 50.0, "GFLOP/s", device="cpu"))
    report = store.report(run_id)
    assert report is not None and fleet_cells(report) == [] and host_rows(report, "a") == []
    assert fleet_label(report["run"]) == "cpu"


def test_fleet_label_counts_hosts_and_lost_ones() -> None:
    fleet = '{"hosts": ["a", "b", "c"], "states": {"b": "lost"}}'
    assert fleet_label({"device": "fleet", "fleet": fleet}) == "fleet (3 hosts, 1 lost)"
    assert fleet_label({"device": "fleet", "fleet": '{"hosts": ["a"]}'}) == "fleet (1 host)"


def show(store_path: Path, run_id: int, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["show", str(run_id), "--store", str(store_path)]) == 0
    return capsys.readouterr().out


def test_show_prints_the_fleet_grid_and_a_host_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(tmp_path / "s.db")
    run_id = fleet_run(store)
    out = show(tmp_path / "s.db", run_id, capsys)
    lines = out.splitlines()
    assert "device fleet (16 hosts, 1 lost)" in lines[0]
    header = next(line for line in lines if "host" in line and "cuda:7" in line)
    assert header.split("┃")[1].strip() == "host"
    failing = next(line for line in lines if line.startswith(f"│ {FAILING} ") and "cuda:" not in line)
    cells = [c.strip() for c in failing.split("│")[1:-1]]
    assert cells[3 + 3].startswith("FAIL ") and all(c.startswith("PASS ") for c in cells[3:6])
    assert f"│ {LOST} │ LOST " in out
    verdicts_header = next(line for line in lines if "check" in line and "meaning" in line)
    assert verdicts_header.split("┃")[1].strip() == "host"
    assert any(line.startswith(f"│ {FAILING} │ matmul │ sweep │ cuda:3 │ FAIL") for line in lines)


def test_show_of_a_normal_run_has_no_host_column(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = Store(tmp_path / "s.db")
    run_id = store.begin_run(["matmul"], "cpu", "quick", "python3", [])
    store.record(run_id, StageStarted("matmul", "cpu", 1, "python3"))
    store.record(run_id, Measurement("matmul", "matmul fp32 1024", 50.0, "GFLOP/s", device="cpu"))
    store.record(run_id, Verdict("matmul", "sweep", Status.PASS, "fine", device="cpu"))
    store.record(run_id, StageFinished("matmul", Status.PASS))
    out = show(tmp_path / "s.db", run_id, capsys)
    headers = [line for line in out.splitlines() if line.startswith("┃")]
    assert [h.split("┃")[1].strip() for h in headers] == ["stage", "stage"]  # the verdicts' and the figures'
    assert "hosts x devices" not in out and "host" not in "".join(headers)


def test_the_inter_host_figures_are_never_a_hosts_key_figure(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    run_id = small_fleet(store, ["a", "b"])
    busbw = Measurement("fleet-links", "all_reduce 1 MiB busbw", 0.2, "GB/s", device="cpu", conditions={"trust": "OK"})
    store.record(run_id, busbw, host="a")
    figure(store, run_id, "b", "matmul fp32 1024", 60.0, "cpu")
    lines = cells_by_host(store, run_id)
    assert cell(lines["a"], "cpu").figure is None
    assert cell(lines["b"], "cpu").figure["name"] == "matmul fp32 1024"
