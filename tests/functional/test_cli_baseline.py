"""`export RUN --format baseline` and `run --baseline FILE` through the real command: a round trip, and a bad file
refused in one line before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

from cli_calls import assert_one_line_error, rigcheck
from rigcheck.engine.events import Facts, Measurement, StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.measure.baseline_file import parse_baseline
from rigcheck.engine.store import Store

H200 = "NVIDIA H200"


def h200_run(store: Store) -> int:
    """A stored matmul run on one H200, as the engine writes it."""
    run_id = store.begin_run(["matmul"], "cuda:0", "quick", "python", [])
    store.record(run_id, StageStarted("matmul", "cuda:0", 1, "python"))
    conditions = {"gpu_name": H200, "trust": "TRUSTED"}
    for name, value in (("matmul bf16 4096", 787.2), ("matmul fp16 4096", 750.6)):
        store.record(run_id, Measurement("matmul", name, value, "TFLOP/s", 1.0, 20, "cuda:0", {}, conditions))
    numbers = {"value": 787.2, "unit": "TFLOP/s", "model": H200}
    store.record(run_id, Verdict("matmul", "best-bf16", Status.PASS, "best bf16", numbers, device="cuda:0"))
    store.record(run_id, StageFinished("matmul", Status.PASS, 0))
    store.end_run(run_id, "complete", 0)
    return run_id


def test_export_as_a_baseline_round_trips_into_run_baseline(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    run_id = h200_run(Store(db))
    out = tmp_path / "baseline.json"
    done = rigcheck("export", str(run_id), "--format", "baseline", "-o", str(out), store=db)
    assert done.returncode == 0, done.stderr
    figures = json.loads(out.read_text())["figures"]
    assert figures[f"{H200}/matmul bf16 4096"]["value"] == 787.2
    assert figures[f"{H200}/best-bf16"]["source"].startswith(f"rigcheck run {run_id} on ")
    probe = rigcheck("run", "probe", "--device", "cpu", "--baseline", str(out), store=db)
    assert probe.returncode == 0, probe.stderr


def test_a_bad_baseline_is_one_line_and_exit_2_before_the_run(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"format": "rigcheck-baseline", "version": 1, "figures": {"NVIDIA H200/best-bf16": {"value": "x"}}}'
    )
    assert_one_line_error(rigcheck("run", "probe", "--device", "cpu", "--baseline", str(bad), store=db), str(bad))
    assert_one_line_error(
        rigcheck("run", "probe", "--baseline", str(tmp_path / "none.json"), store=db), "none.json", "cannot read"
    )
    assert not db.exists()  # nothing was started or stored


def test_a_run_whose_cpu_is_unknown_makes_no_baseline(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = Store(db)
    run_id = store.begin_run(["matmul"], "cpu", "quick", "python", [])
    store.record(run_id, Measurement("matmul", "matmul fp32 512", 90.0, "GFLOP/s", 1.0, 5, "cpu"))
    store.end_run(run_id, "complete", 0)
    done = rigcheck("export", str(run_id), "--format", "baseline", store=db)
    assert_one_line_error(done, "no figure to make a baseline of")


def cpu_run(store: Store, trust: str) -> int:
    run_id = store.begin_run(["probe", "matmul"], "cpu", "quick", "python", [])
    store.record(run_id, Facts("probe", {"cpu": {"model": "AMD EPYC 9654", "usable_cpus": 16, "logical_cpus": 16}}))
    figure = Measurement("matmul", "matmul fp32 512", 998.0, "GFLOP/s", 9.0, 9, "cpu", {}, {"trust": trust})
    store.record(run_id, figure)
    store.end_run(run_id, "complete", 0)
    return run_id


def test_a_cpu_only_run_makes_a_baseline_of_its_cpu_figures(tmp_path: Path) -> None:
    """Seen: `export --format baseline` refused a CPU-only run."""
    db = tmp_path / "s.db"
    run_id = cpu_run(Store(db), "TRUSTED")
    done = rigcheck("export", str(run_id), "--format", "baseline", store=db)
    assert done.returncode == 0, done.stderr
    baseline = parse_baseline(done.stdout)
    entry = baseline["figures"]["AMD EPYC 9654 (16 CPUs)/matmul fp32 512"]
    assert entry["value"] == 998.0 and entry["unit"] == "GFLOP/s" and f"rigcheck run {run_id}" in entry["source"]


def test_a_cpu_run_of_disturbed_figures_says_why_it_makes_no_baseline(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    run_id = cpu_run(Store(db), "SUSPECT")
    done = rigcheck("export", str(run_id), "--format", "baseline", store=db)
    assert_one_line_error(done, "no sound figure to make a baseline of (1 SUSPECT)")
