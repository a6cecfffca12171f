"""One stage's figures judged in one call (engine/trust/stage_judge.py): peers only where the stage ran on more than
one device, the GPU against the CPU only where the CPU was one of them, then the reference and the expectations, in
that order."""

from __future__ import annotations

import time

from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.trust.stage_judge import StageFigures, judge_stage


def figure(name: str, value: float, device: str, unit: str = "TFLOP/s", bound: str = "compute") -> Measurement:
    params = {"dtype": "bf16", "bound": bound, "spread_rel": 0.01, "gpu_name": "NVIDIA H200"}
    return Measurement("matmul", name, value, unit, 1.0, 20, device, params, {}, t=time.time() - 5)


# two H200s, one at 400 TFLOP/s beside the other's 700: 0.57x its peer, 43% below
TWO = [figure("matmul bf16 4096", 700.0, "cuda:0"), figure("matmul bf16 4096", 400.0, "cuda:1")]


def judged(figures: list[Measurement], devices: set[str], stage: str = "matmul") -> list[tuple[str, str, str]]:
    given = StageFigures(stage, figures, frozenset(devices), 0.10)
    return [(v.check, v.status.value, v.device) for v in judge_stage(given)]


def test_a_stage_on_two_gpus_compares_them_as_peers_first() -> None:
    assert judged(TWO, {"cuda:0", "cuda:1"}) == [
        ("peers matmul bf16 4096", "WARN", "cuda:1"),
        ("reference matmul bf16 4096", "WARN", "cuda:1"),
        ("expectations", "PASS", ""),
    ]
    (peers, *_) = judge_stage(StageFigures("matmul", TWO, frozenset({"cuda:0", "cuda:1"}), 0.10))
    assert "0.57x its 1 peers' median (700" in peers.explanation and "43% below" in peers.explanation


def test_a_stage_run_on_one_device_has_no_peers_even_where_its_figures_name_two() -> None:
    """One child (a stage that is not per-device) measured both GPUs: no peer comparison, the rest as ever."""
    assert judged(TWO, {"cuda:0"}) == [("reference matmul bf16 4096", "WARN", "cuda:1"), ("expectations", "PASS", "")]


def test_the_gpu_against_the_cpu_only_where_the_cpu_ran() -> None:
    train = [
        figure("train resnet bs64", 50.0, "cpu", "img/s", "cpu"),
        figure("train resnet bs64", 1000.0, "cuda:0", "img/s"),
    ]
    both = list(judge_stage(StageFigures("train", train, frozenset({"cpu", "cuda:0"}), 0.10)))
    assert [(v.check, v.status, v.device) for v in both] == [("speedup", Status.PASS, "cuda:0")]
    assert both[0].explanation == "cuda:0 over the CPU: resnet bs64: 20.0x"  # 1000 / 50
    assert judged(train, {"cuda:0", "cuda:1"}, "train") == []
    assert judged(train, {"cpu"}, "train") == []
