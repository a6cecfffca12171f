"""A figure's own history from the store (same GPU by UUID, or this host's CPU; TRUSTED only; earlier runs only),
and the runner naming a drift from it after the stage."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rigcheck.engine.events import Event, Measurement, StageFinished, Status, Verdict
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan
from rigcheck.engine.store import Store
from rigcheck.engine.store.history import earlier_clean_figures
from rigcheck.engine.trust.history import Past
from stage_infos import fake


def figure(value: float, uuid: str = "GPU-a", trust: str = "TRUSTED", device: str = "cuda:0") -> Measurement:
    params = {"bound": "compute", "gpu_uuid": uuid}
    return Measurement("matmul", "matmul bf16 4096", value, "TFLOP/s", 1.0, 5, device, params, {"trust": trust})


def test_the_store_gives_the_same_gpus_earlier_clean_figures_newest_first(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.db")
    runs = [store.begin_run(["matmul"], "cuda:0", "quick", "python3", []) for _ in range(4)]
    store.record(runs[0], figure(780.0))
    store.record(runs[0], figure(700.0, uuid="GPU-b"))  # another GPU: not this one's history
    store.record(runs[1], figure(300.0, trust="SUSPECT"))  # disturbed: not clean
    store.record(runs[2], figure(770.0))
    store.record(runs[3], figure(760.0))  # the run being judged: not earlier
    found = earlier_clean_figures(store, runs[3], figure(760.0))
    assert found == [Past(runs[2], 770.0, "TFLOP/s"), Past(runs[0], 780.0, "TFLOP/s")]
    cpu = Measurement("matmul", "matmul fp32 512", 900.0, "GFLOP/s", 1.0, 5, "cpu", {}, {"trust": "TRUSTED"})
    store.record(runs[0], cpu)
    assert earlier_clean_figures(store, runs[3], cpu) == [Past(runs[0], 900.0, "GFLOP/s")]
    assert earlier_clean_figures(store, runs[3], replace(figure(1.0), params={})) == []  # no UUID: no history


def test_the_runner_names_a_drift_from_the_gpus_own_history(tmp_path: Path) -> None:
    info = replace(fake("matmul", "lone_h200"), per_device=True)
    for value, expected in ((600.0, [Status.WARN]), (775.0, [])):
        events: list[Event] = []
        options = {"value": value, "params": {"gpu_uuid": "GPU-a"}}
        run = Run(RunPlan(9, RunRequest((info,), "cuda:0", "quick", options=options), tmp_path), [events.append])
        run.history = lambda m: [Past(8, 780.0, "TFLOP/s"), Past(7, 776.0, "TFLOP/s"), Past(6, 778.0, "TFLOP/s")]
        run.start()
        assert run.wait(60)
        drifted = [e for e in events if isinstance(e, Verdict) and e.check.startswith("history")]
        assert [v.status for v in drifted] == expected
        if drifted:
            assert "23% below its own clean median 778 (compared with run 8, the latest of 3" in drifted[0].explanation
            assert [e.status for e in events if isinstance(e, StageFinished)] == [Status.WARN]
