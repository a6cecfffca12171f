"""A host-bound figure (any CPU figure, a GPU training step below batch 4096) against its own history: it moves with
the host's Python and scheduler from run to run (24% and 29% on a quiet H100 host, 2026-12-07, each then named as
drifted), so its history names it only past the band its expectation declares; a compute-bound figure keeps 10%."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.events import Measurement, Status
from rigcheck.engine.trust import expectations
from rigcheck.engine.trust.history import DRIFT, Past, history_verdict, history_verdicts, host_bound

EARLIER = [Past(4, 100.0, "samples/s"), Past(3, 100.0, "samples/s"), Past(2, 100.0, "samples/s")]


def train(value: float, batch: int = 256, device: str = "cuda:0", **params: Any) -> Measurement:
    given: dict[str, Any] = {"batch": batch, "channels": 64, "precision": "bf16", "gpu_uuid": "GPU-1"} | params
    given.setdefault("bound", "compute" if device.startswith("cuda") else "host")
    conditions = {"trust": "TRUSTED"}
    return Measurement("training", "train c64 b256 bf16", value, "samples/s", None, 20, device, given, conditions)


def test_which_figures_the_host_sets() -> None:
    assert host_bound(train(1.0, batch=256)) and host_bound(train(1.0, batch=4095))
    assert not host_bound(train(1.0, batch=4096)) and not host_bound(train(1.0, batch=8192))
    assert host_bound(train(1.0, batch=8192, device="cpu"))
    assert not host_bound(Measurement("matmul", "matmul bf16 4096", 1.0, "TFLOP/s", 0.1, 5, "cuda:0", {}))


def test_a_small_batch_within_its_declared_band_is_not_named_and_past_it_is() -> None:
    assert history_verdict(train(76.0), EARLIER, "training", band=0.3) is None  # 24% below, inside 30%
    past = history_verdict(train(69.0), EARLIER, "training", band=0.3)  # 31% below
    assert past is not None and past.status == Status.WARN and past.tolerance == pytest.approx(0.3)
    assert "31% below its own clean median 100" in past.explanation


def test_a_host_bound_figure_above_its_history_is_no_fault_and_a_compute_bound_one_is_named() -> None:
    """The H100 host's CPU c64 b256 at 7,175 samples/s, 48% above a median of 4,839 its busier runs made."""
    assert history_verdict(train(148.0, device="cpu"), EARLIER, "training", band=0.4) is None
    assert history_verdict(train(148.0), EARLIER, "training", band=0.3) is None  # batch 256 on a GPU
    above = history_verdict(train(111.0, batch=4096), EARLIER, "training", band=0.3)
    assert above is not None and "11% above its own clean median" in above.explanation


def test_a_compute_bound_figure_keeps_ten_percent_whatever_band_it_is_given() -> None:
    found = history_verdict(train(89.0, batch=4096), EARLIER, "training", band=0.3)
    assert found is not None and found.status == Status.WARN and found.tolerance == pytest.approx(DRIFT)
    assert history_verdict(train(91.0, batch=4096), EARLIER, "training", band=0.3) is None


def test_with_no_band_a_host_bound_figure_keeps_ten_percent() -> None:
    assert history_verdict(train(89.0), EARLIER, "training") is not None
    assert history_verdict(train(91.0), EARLIER, "training") is None


def test_the_stage_entry_gives_history_the_band_of_the_figures_own_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """expectations.py hands each figure's declared band (1 - its entry's warn_below) to the history."""
    seen: list[float] = []
    monkeypatch.setattr(expectations, "declared_band", lambda m, baseline, cpu: 0.4)
    given = list(history_verdicts([train(71.0, device="cpu")], "training", lambda m: EARLIER, lambda m: 0.4))
    assert given == []  # 29% below, inside 40%
    for verdict in expectations.expectation_verdicts([train(59.0, device="cpu")], "training", None, lambda m: EARLIER):
        if verdict.check.startswith("history"):
            seen.append(verdict.tolerance or 0.0)
    assert seen == [pytest.approx(0.4)]  # 41% below: named, against the 40% band


def test_the_declared_band_is_the_figures_own_entrys() -> None:
    h200 = train(4e4, precision="fp32")
    h200 = Measurement(
        "training", "train c64 b256 fp32", 4e4, "samples/s", None, 20, "cuda:0", h200.params,
        {"gpu_name": "NVIDIA H200", "trust": "TRUSTED"},
    )  # fmt: skip
    assert expectations.declared_band(h200, None, "") == pytest.approx(0.3)  # the H200's entry: warn below 0.7
    matmul = Measurement(
        "matmul", "matmul bf16 8192", 780.0, "TFLOP/s", 0.01, 20, "cuda:0", {"bound": "compute"},
        {"gpu_name": "NVIDIA H200", "trust": "TRUSTED"},
    )  # fmt: skip
    assert expectations.declared_band(matmul, None, "") == pytest.approx(0.15)
    unknown = Measurement("training", "train c64 b256 fp32", 4e4, "samples/s", None, 20, "cuda:0", {}, {})
    assert expectations.declared_band(unknown, None, "") == 0.0
