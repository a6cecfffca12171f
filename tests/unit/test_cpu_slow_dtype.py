"""Whether a CPU has a bf16 matrix unit comes from its flags, never from a measured speed: without one the sweep
skips bf16's larger sizes, saying so; with one (avx512_bf16) every size is measured, however slow bf16 ran
(issue 34: a rate taken under contention once called an avx512_bf16 CPU one without it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from rigcheck.engine.events import Event, Measurement, Status, Verdict
from rigcheck.engine.stage import StageContext, StageSpec
from rigcheck.engine.stages.matmul import stage as matmul
from rigcheck.engine.stages.matmul.cpu_dtypes import native_cpu_dtypes


def fake_points(rates: dict[str, float], measured: list[tuple[str, int]]):  # type: ignore[no-untyped-def]
    def measure_point(dtype: str, m: int, n: int, k: int, *_: object, library: str = "torch") -> Iterator[Event]:
        measured.append((dtype, m))
        params = {"dtype": dtype, "m": m, "n": n, "k": k, "library": library, "noisy": False, "share_of_peak": None}
        yield Measurement(matmul.STAGE, f"matmul {dtype} {m}", rates[dtype], "GFLOP/s", device="cpu", params=params)

    return measure_point


@pytest.mark.parametrize(
    ("native", "bf16_rate", "skipped"),
    [
        (set(), 40.0, True),  # no unit in the flags: skipped even where bf16 happened to run fast
        ({"bf16"}, 0.9, False),  # a unit in the flags: measured at every size even at 0.6% of fp32
        (None, 0.9, False),  # flags unreadable: nothing is inferred, every size is measured
    ],
)
def test_bf16_sizes_follow_the_cpu_flags_not_the_speed(
    monkeypatch: pytest.MonkeyPatch, native: set[str] | None, bf16_rate: float, skipped: bool
) -> None:
    measured: list[tuple[str, int]] = []
    monkeypatch.setattr(matmul, "measure_point", fake_points({"fp32": 150.0, "bf16": bf16_rate}, measured))
    monkeypatch.setattr(matmul, "warm_up_cpu", lambda: None)
    monkeypatch.setattr(matmul, "native_cpu_dtypes", lambda: native)
    events = list(matmul.sweep(StageContext(StageSpec("matmul", "cpu", "standard")), torch.device("cpu")))
    bf16_sizes = [size for dtype, size in measured if dtype == "bf16"]
    skips = [e for e in events if isinstance(e, Verdict) and e.check == "bf16-larger"]
    if skipped:
        assert bf16_sizes == [512]
        assert len(skips) == 1 and skips[0].status == Status.SKIP
        assert "flags show no native bf16 matrix unit" in skips[0].explanation
    else:
        assert bf16_sizes == [512, 1024, 2048] and not skips
    assert [size for dtype, size in measured if dtype == "fp32"] == [512, 1024, 2048, 512, 1024, 2048]
    bests = [e for e in events if isinstance(e, Verdict) and e.check.startswith("best-")]
    assert bests and all(v.status == Status.NOT_JUDGED for v in bests)  # no CPU reference: never a PASS


@pytest.mark.parametrize(
    ("text", "native"),
    [
        ("processor : 0\nflags : fpu avx2 fma avx512f avx512_bf16\n", {"bf16"}),
        ("processor : 0\nflags : fpu avx2 fma avx512f amx_bf16 amx_tile avx512_fp16\n", {"bf16", "fp16"}),
        ("processor : 0\nflags : fpu avx2 fma\n", set()),
        ("processor : 0\nFeatures : fp asimd sve bf16 svebf16\n", {"bf16"}),
        ("processor : 0\nFeatures : fp asimd\n", set()),
        ("processor : 0\n", None),
    ],
)
def test_native_dtypes_are_read_from_the_flags(tmp_path: Path, text: str, native: set[str] | None) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(text)
    assert native_cpu_dtypes(cpuinfo) == native
    assert native_cpu_dtypes(tmp_path / "missing") is None
