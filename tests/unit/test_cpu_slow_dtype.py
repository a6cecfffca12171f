"""A CPU without a bf16 matrix unit runs bf16 at a sliver of fp32: the sweep skips its larger sizes, saying why."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch
from rigcheck.engine.events import Event, Measurement, Status, Verdict
from rigcheck.engine.stage import StageContext, StageSpec
from rigcheck.engine.stages.matmul import stage as matmul


def fake_points(rates: dict[str, float], measured: list[tuple[str, int]]):  # type: ignore[no-untyped-def]
    def measure_point(dtype: str, m: int, n: int, k: int, *_: object, library: str = "torch") -> Iterator[Event]:
        measured.append((dtype, m))
        params = {"dtype": dtype, "m": m, "n": n, "k": k, "library": library, "noisy": False, "share_of_peak": None}
        yield Measurement(matmul.STAGE, f"matmul {dtype} {m}", rates[dtype], "GFLOP/s", device="cpu", params=params)

    return measure_point


@pytest.mark.parametrize(("bf16_rate", "skipped"), [(0.9, True), (40.0, False)])
def test_bf16_far_below_fp32_skips_its_larger_sizes(
    monkeypatch: pytest.MonkeyPatch, bf16_rate: float, skipped: bool
) -> None:
    measured: list[tuple[str, int]] = []
    monkeypatch.setattr(matmul, "measure_point", fake_points({"fp32": 150.0, "bf16": bf16_rate}, measured))
    monkeypatch.setattr(matmul, "warm_up_cpu", lambda: None)
    events = list(matmul.sweep(StageContext(StageSpec("matmul", "cpu", "standard")), torch.device("cpu")))
    bf16_sizes = [size for dtype, size in measured if dtype == "bf16"]
    skips = [e for e in events if isinstance(e, Verdict) and e.check == "bf16-larger"]
    if skipped:
        assert bf16_sizes == [512]  # 1024 and 2048 would take minutes each at this rate
        assert len(skips) == 1 and skips[0].status == Status.SKIP and "0.6% of fp32" in skips[0].explanation
    else:
        assert bf16_sizes == [512, 1024, 2048] and not skips
    assert [size for dtype, size in measured if dtype == "fp32"] == [512, 1024, 2048, 512, 1024, 2048]
