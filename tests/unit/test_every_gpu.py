"""Per-GPU stages on several GPUs: one child per GPU at once, crash isolation, host work once, and peers."""

from __future__ import annotations

import itertools
import time
from dataclasses import replace
from pathlib import Path

from rigcheck.engine.events import Event, Measurement, Progress, StageFinished, Status, Verdict
from rigcheck.engine.measure.speedup import gpu_over_cpu
from rigcheck.engine.run.request import RunRequest
from rigcheck.engine.run.runner import Run, RunPlan, stage_batches
from rigcheck.engine.trust.peers import peer_verdicts
from stage_infos import fake

GPUS = ("cuda:0", "cuda:1", "cuda:2")


def run_per_gpu(tmp_path: Path, serial: bool = False, cpu_part: bool = False, **options: object) -> list[Event]:
    info = replace(fake("matmul", "per_gpu"), per_device=True, cpu_part=cpu_part)
    events: list[Event] = []
    plan = RunPlan(1, RunRequest((info,), "all", "quick", gpus=GPUS, options=dict(options), serial=serial), tmp_path)
    run = Run(plan, [events.append])
    run.start()
    assert run.wait(60)
    return events


def test_every_gpu_runs_at_once_and_a_crash_on_one_leaves_the_others_figures(tmp_path: Path) -> None:
    events = run_per_gpu(tmp_path, crash_cuda1=True, seconds=2.0)
    figures = [e for e in events if isinstance(e, Measurement)]
    assert sorted(m.device for m in figures) == ["cuda:0", "cuda:2"]
    crash = [e for e in events if isinstance(e, Verdict) and e.status == Status.CRASH]
    assert len(crash) == 1 and crash[0].device == "cuda:1" and "SIGSEGV" in crash[0].explanation
    (finished,) = [e for e in events if isinstance(e, StageFinished)]
    assert finished.status == Status.CRASH
    # at once: each child's 2 s of work overlaps the other's, whatever the machine's pace (one after the other,
    # the second would start when the first ended, as the serial test sees)
    starts = sorted(v.numbers["start"] for v in events if isinstance(v, Verdict) and v.check == "done")
    assert len(starts) == 2 and starts[1] - starts[0] < 2.0, f"the children started {starts[1] - starts[0]:.1f} s apart"
    assert {p.name for p in tmp_path.iterdir()} >= {"matmul-cuda0.log", "matmul-cuda1.log", "matmul-cuda2.log"}


def test_serial_runs_one_gpu_after_another_and_host_work_runs_once_after_them(tmp_path: Path) -> None:
    events = run_per_gpu(tmp_path, serial=True, cpu_part=True)
    done = [e for e in events if isinstance(e, Verdict) and e.check == "done"]
    assert [v.device for v in done] == ["cuda:0", "cuda:1", "cuda:2", "cpu"]
    starts = [v.numbers["start"] for v in done]
    assert all(b - a >= 0.9 for a, b in itertools.pairwise(starts))
    assert [v.explanation.split()[1] for v in done] == ["(gpu)", "(gpu)", "(gpu)", "(cpu)"]


def test_batches_of_a_run() -> None:
    info = replace(fake("training", "per_gpu"), per_device=True, cpu_part=True)
    plan = RunPlan(1, RunRequest((info,), "all", gpus=("cuda:0", "cuda:1")))
    assert [[c.device for c in b] for b in stage_batches(info, plan)] == [["cuda:0", "cuda:1"], ["cpu"]]
    one = RunPlan(1, RunRequest((info,), "cuda:0", gpus=("cuda:0",)))
    assert [[c.device for c in b] for b in stage_batches(info, one)] == [["cuda:0"]]
    probe = replace(info, per_device=False)
    assert [[c.device for c in b] for b in stage_batches(probe, plan)] == [["all"]]


def test_a_slow_gpu_is_named_against_its_peers_through_the_runner(tmp_path: Path) -> None:
    events = run_per_gpu(tmp_path, slow_cuda2=True)
    (warn,) = [e for e in events if isinstance(e, Verdict) and e.check.startswith("peers")]
    assert warn.status == Status.WARN and warn.device == "cuda:2"
    assert warn.explanation.startswith(
        "cuda:2 matmul bf16 4096 595 TFLOP/s: 0.85x its 2 peers' median (700, MAD 0; 15% below"
    )
    (finished,) = [e for e in events if isinstance(e, StageFinished)]
    assert finished.status == Status.WARN


def figure(device: str, value: float, **conditions: object) -> Measurement:
    base = {"trust": "TRUSTED", "gpu_name": "NVIDIA H200", "utilization_mean_pct": 100.0}
    params = {"bound": "compute"}
    return Measurement("matmul", "matmul bf16 8192", value, "TFLOP/s", 1.0, 5, device, params, base | conditions)


def test_peer_rule_names_fifteen_percent_not_five_and_needs_two_gpus() -> None:
    slow = figure(
        "cuda:3", 682.0, sm_clock_mean_mhz=1650.0, sm_clock_max_mhz=1980, throttle=["hardware thermal slowdown"]
    )
    peers = [figure(f"cuda:{i}", v) for i, v in enumerate((781.0, 790.0, 785.0))]
    (warn,) = peer_verdicts([*peers, slow], "matmul")
    assert warn.device == "cuda:3" and warn.status == Status.WARN
    assert warn.explanation == (
        "cuda:3 matmul bf16 8192 682 TFLOP/s: 0.87x its 3 peers' median (785, MAD 4; 13% below, peers 781-790); "
        "likely cause: thermal slowdown; next: `nvidia-smi -q -d PERFORMANCE,TEMPERATURE`; check the fans and airflow"
    )
    close = list(peer_verdicts([*peers, figure("cuda:3", 750.0)], "matmul"))
    assert [v.status for v in close] == [Status.PASS]
    assert list(peer_verdicts([figure("cuda:0", 500.0)], "matmul")) == []


def test_figures_that_measure_the_host_are_not_compared() -> None:
    host_bound = [figure("cuda:0", 100.0, utilization_mean_pct=40.0), figure("cuda:1", 50.0, utilization_mean_pct=40.0)]
    assert list(peer_verdicts(host_bound, "training")) == []
    noisy = [figure("cuda:0", 100.0), figure("cuda:1", 50.0, trust="NOISY")]
    assert list(peer_verdicts(noisy, "matmul")) == []


def test_gpu_over_cpu_speedups_per_gpu() -> None:
    def train(device: str, value: float) -> Measurement:
        return Measurement("training", "train c64 b256 fp32", value, "samples/s", None, 5, device)

    verdicts = list(
        gpu_over_cpu([train("cuda:0", 40000.0), train("cuda:1", 20000.0), train("cpu", 4000.0)], "training")
    )
    assert [(v.device, v.numbers["speedup"]) for v in verdicts] == [
        ("cuda:0", {"c64 b256 fp32": 10.0}),
        ("cuda:1", {"c64 b256 fp32": 5.0}),
    ]


def test_host_work_is_computed_once_and_shared_between_children(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import threading

    import torch
    from rigcheck.engine.stages.common.shared_cache import SHARED_DIR_ENV, cached_tensor

    monkeypatch.setenv(SHARED_DIR_ENV, str(tmp_path / "shared"))
    calls: list[int] = []

    def compute() -> torch.Tensor:
        calls.append(1)
        time.sleep(0.3)
        return torch.arange(4.0, dtype=torch.float64)

    results: list[torch.Tensor] = []
    threads = [threading.Thread(target=lambda: results.append(cached_tensor("ref 4096", compute))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and all(torch.equal(r, results[0]) for r in results) and len(results) == 3
    assert torch.equal(cached_tensor("ref 1024", lambda: torch.zeros(2)), torch.zeros(2)) and len(calls) == 1


def test_device_timed_figures_are_compared_even_when_nvml_utilization_lags() -> None:
    def timed(device: str, value: float) -> Measurement:
        m = figure(device, value, utilization_mean_pct=15.0)
        return replace(m, params=m.params | {"timer": "events"})

    (warn,) = peer_verdicts([timed("cuda:0", 790.0), timed("cuda:1", 600.0)], "matmul")
    assert warn.device == "cuda:1" and warn.status == Status.WARN
    pageable = [
        replace(timed(d, v), params={"bound": "link", "pinned": False, "timer": "events"})
        for d, v in (("cuda:0", 7.1), ("cuda:1", 3.6))
    ]
    assert list(peer_verdicts(pageable, "bandwidth")) == []  # host memory, not the GPU


def test_a_cancelled_stage_on_several_gpus_is_a_skip_not_a_pass(tmp_path: Path) -> None:
    slow = replace(fake("matmul", "polite_wait"), per_device=True)
    events: list[Event] = []
    plan = RunPlan(1, RunRequest((slow,), "all", "quick", gpus=GPUS, options={"seconds": 60}, serial=True), tmp_path)
    run = Run(plan, [events.append])
    run.start()
    deadline = time.monotonic() + 120
    while not any(isinstance(e, Progress) for e in events):  # the first GPU's child is running (not a fixed sleep)
        assert time.monotonic() < deadline, "the first child never started"
        time.sleep(0.02)
    started = time.monotonic()
    run.cancel_stage()
    assert run.wait(30)
    assert time.monotonic() - started < 20.0  # not the stage's 60 s: a busy host may take seconds to end a child
    (finished,) = [e for e in events if isinstance(e, StageFinished)]
    assert finished.status == Status.SKIP
    skipped = [e.device for e in events if isinstance(e, Verdict) and e.check == "stage"]
    assert skipped == ["cuda:0", "cuda:1", "cuda:2"]  # the cut-off child, then each batch left unrun
