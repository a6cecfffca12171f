"""A best that would FAIL is measured once more after a bounded wait for the GPU to go idle; the wait's edges;
and the second figure stands for its dtype, with the wait and the first figure in its verdict."""

from __future__ import annotations

import types
from collections.abc import Iterator

import pytest
import torch
from rigcheck.engine.events import Event, Measurement, Status, Verdict
from rigcheck.engine.stage import StageContext, StageSpec
from rigcheck.engine.stages.matmul import remeasure
from rigcheck.engine.stages.matmul import stage as matmul
from rigcheck.engine.stages.matmul.remeasure import IDLE_PCT, IDLE_READS, Waited, wait_idle, waited_words
from rigcheck.engine.stages.matmul.verdicts import bests


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def __call__(self) -> float:
        return self.now


def reader(values: list[int | None]):  # type: ignore[no-untyped-def]
    it = iter(values)
    return lambda: next(it, values[-1])


@pytest.mark.parametrize(
    ("values", "idle"),
    [
        ([IDLE_PCT] * IDLE_READS, True),  # at the threshold: idle
        ([IDLE_PCT + 1] * 200, False),  # one above, all the way: still busy at the limit
        ([100, 100, 0, 0, 0], True),  # the rival stops
        ([0, 0, 90, 0, 0, 0], True),  # a burst resets the count
    ],
)
def test_wait_idle_edges(values: list[int | None], idle: bool) -> None:
    clock = Clock()
    waited = wait_idle(reader(values), 5.0, clock.sleep, clock)
    assert waited.idle is idle
    assert waited.seconds <= 5.0 + remeasure.POLL_S
    if not idle:
        assert waited.last_busy_pct == IDLE_PCT + 1 and "still busy" in waited_words(waited)


def test_no_reading_is_a_short_pause_said_as_such() -> None:
    clock = Clock()
    waited = wait_idle(None, 30.0, clock.sleep, clock)
    assert waited.idle is None and waited.seconds == remeasure.NO_READING_PAUSE_S
    assert "could not be read" in waited_words(waited)
    assert wait_idle(reader([None]), 30.0, clock.sleep, clock).idle is None


def test_wait_for_idle_without_nvml_pauses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(remeasure.nvml, "LIBRARY", "libnot-there.so.1")
    monkeypatch.setattr(remeasure, "NO_READING_PAUSE_S", 0.01)
    assert remeasure.wait_for_idle("0000:1b:00.0").idle is None


def point(value: float, name: str = "matmul fp32 4096", again: dict | None = None) -> Measurement:  # type: ignore[type-arg]
    params = {"dtype": "fp32", "m": 4096, "n": 4096, "k": 4096, "library": "torch", "noisy": False}
    params |= {"share_of_peak": None, "peak": None, "spread_rel": 0.01, "broken": None, "pci_bus_id": "0000:1b:00.0"}
    if again:
        params["remeasured"] = again
    return Measurement("matmul", name, value, "TFLOP/s", 0.1, 20, "cuda:0", params)


def test_a_figure_measured_again_stands_for_its_dtype_even_when_lower() -> None:
    again = {"words": "measured again once the GPU was idle, after waiting 3.0 s", "waited_s": 3.0, "first": 25.0}
    chosen, _ = bests([point(25.0), point(24.0, "matmul fp32 4096 again", again), point(20.0, "matmul fp32 1024")])
    assert chosen["fp32"].name == "matmul fp32 4096 again"


def run_sweep(monkeypatch: pytest.MonkeyPatch, first: float, second: float) -> tuple[list[Event], list[str]]:
    measured: list[str] = []
    values = iter([first, second])

    def measure_point(dtype: str, m: int, n: int, k: int, device, name, library="torch", again=None) -> Iterator[Event]:  # type: ignore[no-untyped-def]
        measured.append("again" if again else "first")
        value = next(values)
        yield point(value, "matmul fp32 4096" + (" again" if again else ""), again)

    monkeypatch.setattr(matmul, "measure_point", measure_point)
    monkeypatch.setattr(matmul, "gpu_dtypes", lambda d: ["fp32"])
    monkeypatch.setattr(matmul, "GPU_SIZES", {"quick": [4096]})
    monkeypatch.setattr(matmul.torch.cuda, "get_device_name", lambda d: "NVIDIA H200")
    monkeypatch.setattr(matmul, "model_hints", lambda d: (132, None))
    monkeypatch.setattr(matmul, "wait_for_idle", lambda bus, limit: Waited(4.2, True, 100))
    monkeypatch.setattr(matmul, "warm_up_gpu", lambda d: types.SimpleNamespace(words=lambda: "warmed up"))
    events = list(matmul.sweep(StageContext(StageSpec("matmul", "cuda:0", "quick")), torch.device("cuda:0")))
    return events, measured


def test_a_best_below_half_is_measured_again_once_and_judged_on_the_second(monkeypatch: pytest.MonkeyPatch) -> None:
    events, measured = run_sweep(monkeypatch, 25.0, 50.0)  # the H200's fp32 reference is about 51
    assert measured == ["first", "again"]
    (best,) = [e for e in events if isinstance(e, Verdict) and e.check == "best-fp32"]
    assert best.status == Status.PASS and best.numbers["figure"] == "matmul fp32 4096 again"
    assert "measured again once the GPU was idle, after waiting 4.2 s (first 25)" in best.explanation


def test_still_below_half_is_measured_only_once_and_fails_on_the_second(monkeypatch: pytest.MonkeyPatch) -> None:
    events, measured = run_sweep(monkeypatch, 25.0, 24.0)
    assert measured == ["first", "again"]  # once, never a loop
    (best,) = [e for e in events if isinstance(e, Verdict) and e.check == "best-fp32"]
    assert best.status == Status.FAIL and best.numbers["figure"] == "matmul fp32 4096 again"


def test_a_best_that_passes_is_not_measured_again(monkeypatch: pytest.MonkeyPatch) -> None:
    events, measured = run_sweep(monkeypatch, 50.0, 0.0)
    assert measured == ["first"]
    (best,) = [e for e in events if isinstance(e, Verdict) and e.check == "best-fp32"]
    assert best.status == Status.PASS and "again" not in best.explanation
