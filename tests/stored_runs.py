"""Runs written into a store as the engine would write them, for screens and exports to draw."""

from __future__ import annotations

import subprocess

from rigcheck.engine.events import Measurement, StageFinished, StageStarted, Status, Verdict
from rigcheck.engine.store import Store


def two_gpu_run(store: Store) -> int:
    """A stored run with the same figure on two GPUs, one of them SUSPECT with a reason and a note."""
    run_id = store.begin_run(["matmul"], "all", "quick", "python", [])
    store.record(run_id, StageStarted("matmul", "all", 1, "python"))
    for device, value, trust, reasons in (
        ("cuda:0", 51.18, "TRUSTED", []),
        ("cuda:1", 131.9, "SUSPECT", ["SM clock at 73% of max: power cap"]),
    ):
        conditions = {"trust": trust, "trust_reasons": reasons, "verified": True, "notes": ["power-limited at 700 W"]}
        store.record(
            run_id, Measurement("matmul", "matmul fp32 4096", value, "GFLOP/s", 0.2, 5, device, {}, conditions)
        )
    store.record(
        run_id, Measurement("matmul", "matmul bf16 4096", 700.0, "TFLOP/s", 0.3, 5, "cuda:0", {}, {"trust": "NOISY"})
    )
    store.record(
        run_id, Measurement("matmul", "matmul fp8 4096", 900.0, "TFLOP/s", 0.3, 5, "cuda:0", {}, {"trust": "ODD"})
    )
    store.record(run_id, Verdict("matmul", "sweep", Status.FAIL, "cuda:1 is far below cuda:0", device="cuda:1"))
    store.record(run_id, StageFinished("matmul", Status.FAIL, 0))
    store.end_run(run_id, "complete", 1)
    return run_id


def dead_engine_run(store: Store) -> int:
    """A running run whose engine is gone (the pid of a process that has exited), then the store closed:
    opening it where it can be written marks the run interrupted."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    run_id = store.begin_run(["probe"], "cpu", "quick", "python", [])
    store._write("UPDATE runs SET pid = ? WHERE id = ?", (gone.pid, run_id))
    store.close()
    return run_id
