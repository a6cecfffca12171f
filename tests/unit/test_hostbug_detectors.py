"""The host-bug hunters: an injected sgemm race and an injected non-repeating convolution are caught and named."""

from __future__ import annotations

import numpy
import pytest
import torch
from rigcheck.engine.events import Status
from rigcheck.engine.models.board_net import BoardNetConfig
from rigcheck.engine.stages.hostbugs import sgemm_race
from rigcheck.engine.stages.hostbugs import stage as hostbugs
from rigcheck.engine.stages.hostbugs.repeatability import repeat_twice
from rigcheck.engine.stages.hostbugs.sgemm_race import hunt, numpy_matmul, thread_counts
from rigcheck.engine.stages.hostbugs.stage import (
    cpu_conv_checks,
    gpu_repeat_checks,
    repeat_verdict,
    sgemm_verdicts,
    summary,
)


def racy(a, b, threads):  # type: ignore[no-untyped-def]
    """Like the seed's OpenBLAS: right at 1-2 threads; at 4 or more, 0.5% of elements off by about 10."""
    out = numpy_matmul(a, b, 1)
    if threads >= 4:
        out = out.copy()
        flat = out.reshape(-1)
        picked = numpy.random.default_rng(threads).choice(flat.size, size=flat.size // 200, replace=False)
        flat[picked] += 10.0
    return out


def test_thread_counts() -> None:
    assert thread_counts(1) == [1]
    assert thread_counts(16) == [1, 2, 4, 8, 16]
    assert thread_counts(12) == [1, 2, 4, 8, 12]


def test_an_injected_sgemm_race_is_found_and_attributed() -> None:
    libraries = {"numpy": (racy, "openblas SkylakeX kernel"), "torch": (numpy_matmul, "mkl")}
    records, repeats = hunt(libraries, [1, 2, 4, 8], trials=3, n=64)
    assert repeats
    racy_record, clean_record = records
    assert racy_record.corrupted == {1: 0, 2: 0, 4: 3, 8: 3}
    assert 9 < racy_record.worst[4] < 11
    assert not clean_record.bad_threads()
    verdicts = {v.check: v for v in sgemm_verdicts(records, repeats, 64)}
    assert verdicts["sgemm-numpy"].status == Status.FAIL
    assert "3 of 3 trials at 4 threads" in verdicts["sgemm-numpy"].explanation
    assert verdicts["sgemm-torch"].status == Status.PASS
    assert "the fault is in numpy (openblas SkylakeX kernel)" in verdicts["sgemm-attribution"].explanation
    closing = summary(list(verdicts.values()))
    assert closing.status == Status.FAIL and "sgemm-numpy" in closing.explanation


def test_clean_libraries_pass_and_the_summary_says_references_stand() -> None:
    records, repeats = hunt({"numpy": (numpy_matmul, "k")}, [1, 2], trials=2, n=64)
    verdicts = list(sgemm_verdicts(records, repeats, 64))
    assert [v.status for v in verdicts] == [Status.PASS]
    assert summary(verdicts).status == Status.PASS


def test_a_conv_that_does_not_repeat_is_caught() -> None:
    conv = torch.nn.Conv2d(4, 4, 3, padding=1)
    x = torch.randn(2, 4, 7, 7)
    calls = []

    def nondeterministic():  # type: ignore[no-untyped-def]
        calls.append(1)
        out = conv(x)
        return out + (1e-6 if len(calls) % 2 == 0 else 0.0) * (out > 0)

    fraction, largest = repeat_twice(nondeterministic)
    assert 0.2 < fraction < 0.8 and largest > 0
    verdict = repeat_verdict("conv-repeat-onednn", "CPU Conv2d", fraction, largest, "cpu", fail=True)
    assert verdict.status == Status.FAIL and "does not repeat" in verdict.explanation
    assert repeat_twice(lambda: conv(x)) == (0.0, 0.0)


def test_numpy_arrays_are_float32_in_the_hunt() -> None:
    seen = []

    def spy(a, b, threads):  # type: ignore[no-untyped-def]
        seen.append(a.dtype)
        return numpy_matmul(a, b, threads)

    hunt({"spy": (spy, "k")}, [1], trials=1, n=16)
    assert seen == [numpy.float32]


def test_a_float64_reference_that_does_not_repeat_stops_every_sgemm_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def flaky(a, b, threads):  # type: ignore[no-untyped-def]
        out = a @ b
        if out.dtype == numpy.float64:
            calls.append(1)
            out = out + (1e-12 if len(calls) % 2 == 0 else 0.0)  # every second reference call is off by one ulp or so
        return out

    monkeypatch.setattr(sgemm_race, "numpy_matmul", flaky)
    records, repeats = hunt({"numpy": (numpy_matmul, "k")}, [1, 2], trials=2, n=32)
    assert not repeats
    verdicts = list(sgemm_verdicts(records, repeats, 32))
    assert [(v.check, v.status) for v in verdicts] == [("sgemm-reference", Status.FAIL)]
    assert "did not repeat bit for bit: no sgemm can be judged" in verdicts[0].explanation
    closing = summary(verdicts)
    assert closing.status == Status.FAIL and closing.numbers["untrusted"] == ["sgemm-reference"]
    monkeypatch.undo()
    assert hunt({"numpy": (numpy_matmul, "k")}, [1, 2], trials=2, n=32)[1]  # the clean side: it repeats


class ThreadSensitiveConv(torch.nn.Conv2d):
    """Repeats at any one thread count, but at more than one thread differs from one thread by 1e-3."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = super().forward(x)
        return out + 1e-3 if torch.get_num_threads() > 1 else out


def conv_verdicts() -> dict:
    return {v.check: v for v in cpu_conv_checks((2, 4, 7, 7), BoardNetConfig(4, 1), 2, 2)}


def test_a_conv_that_differs_across_thread_counts_fails_and_one_that_agrees_passes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clean = conv_verdicts()
    assert {k: v.status for k, v in clean.items()} == dict.fromkeys(
        ("conv-repeat-onednn", "conv-repeat-native", "model-repeat-cpu", "conv-threads"), Status.PASS
    )
    monkeypatch.setattr(torch.nn, "Conv2d", ThreadSensitiveConv)
    found = conv_verdicts()
    verdict = found["conv-threads"]
    assert verdict.status == Status.FAIL, verdict.explanation
    assert verdict.numbers["rel_error"] > hostbugs.THREAD_TOLERANCE
    assert verdict.explanation.startswith("CPU Conv2d at 1 and 2 threads agrees to")
    assert found["conv-repeat-onednn"].status == Status.PASS  # it repeats: only the thread counts disagree


def test_a_gpu_that_does_not_repeat_warns_and_one_that_repeats_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    def checks(fraction: float) -> dict:
        monkeypatch.setattr(hostbugs, "repeat_twice", lambda compute: (fraction, fraction / 10))
        found = gpu_repeat_checks(torch.device("cpu"), (2, 4, 7, 7), BoardNetConfig(4, 1), 2)
        return {v.check: v for v in found}

    assert {k: v.status for k, v in checks(0.0).items()} == dict.fromkeys(
        ("gpu-matmul-repeat", "gpu-conv-repeat", "gpu-model-repeat"), Status.PASS
    )
    warned = checks(0.02)
    assert {k: v.status for k, v in warned.items()} == dict.fromkeys(
        ("gpu-matmul-repeat", "gpu-conv-repeat", "gpu-model-repeat"), Status.WARN
    )
    assert warned["gpu-conv-repeat"].explanation == (
        "Conv2d (2, 4, 7, 7) on cpu does not repeat: 2.00% of elements differ, by up to 2.00e-03"
    )
    assert summary(list(warned.values())).status == Status.PASS  # a GPU that does not repeat is no CPU reference


def test_the_stage_runs_the_host_checks_once_and_each_gpu_in_its_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stage's plan, with each check faked: `parts=gpu` (a child per GPU) leaves out the host's checks."""
    from rigcheck.engine.events import Progress, Verdict
    from rigcheck.engine.stage import StageContext, StageSpec

    def devices(stage, device):  # type: ignore[no-untyped-def]
        return [torch.device("cuda", 0), torch.device("cpu"), torch.device("cuda", 1), torch.device("cuda", 2)]
        yield  # a generator, as resolve_devices is

    def gpu_checks(device, shape, config, batch):  # type: ignore[no-untyped-def]
        yield Verdict("hostbugs", "gpu-matmul-repeat", Status.PASS, f"{device} repeats", device=str(device))

    def conv_checks(shape, config, batch, cpus):  # type: ignore[no-untyped-def]
        yield Verdict("hostbugs", "conv-threads", Status.PASS, "agrees", device="cpu")

    monkeypatch.setattr(hostbugs, "resolve_devices", devices)
    monkeypatch.setattr(hostbugs, "gpu_repeat_checks", gpu_checks)
    monkeypatch.setattr(hostbugs, "cpu_conv_checks", conv_checks)
    monkeypatch.setattr(hostbugs, "hunt", lambda *args, **kwargs: ([], True))

    def run(parts: str) -> tuple[list[tuple[int, int]], list[str]]:
        events = list(hostbugs.run(StageContext(StageSpec("hostbugs", "all", "quick", (("parts", parts),)))))
        steps = [(e.done, e.total) for e in events if isinstance(e, Progress)]
        return steps, [f"{e.check} {e.device}".strip() for e in events if isinstance(e, Verdict)]

    gpus = ["gpu-matmul-repeat cuda:0", "gpu-matmul-repeat cuda:1", "gpu-matmul-repeat cuda:2"]
    steps, checks = run("gpu")
    assert steps == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert checks == [*gpus, "summary"]
    steps, checks = run("all")
    assert steps == [(0, 5), (1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]
    assert checks == ["conv-threads cpu", *gpus, "summary"]
    assert hostbugs.torch_kernel().endswith(", linked into torch") and "BLAS_INFO" not in hostbugs.torch_kernel()


def test_threads_that_agree_to_the_tolerance_itself_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hostbugs, "rel_error", lambda a, b: hostbugs.THREAD_TOLERANCE)
    assert conv_verdicts()["conv-threads"].status == Status.PASS
    monkeypatch.setattr(hostbugs, "rel_error", lambda a, b: hostbugs.THREAD_TOLERANCE * 1.01)
    assert conv_verdicts()["conv-threads"].status == Status.FAIL


def test_the_float64_reference_and_its_repeat_both_run_on_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def spy(a, b, threads):  # type: ignore[no-untyped-def]
        if a.dtype == numpy.float64:
            seen.append(threads)
        return a @ b

    monkeypatch.setattr(sgemm_race, "numpy_matmul", spy)
    hunt({"numpy": (numpy_matmul, "k")}, [1, 2], trials=1, n=16)
    assert seen == [1, 1, 1, 1]  # reference and repeat, at each of two thread counts: never threaded
    assert sgemm_race.describe(sgemm_race.LibraryRecord("numpy", "k")) == (
        "numpy (k) clean at every thread count: worst error 0.0e+00"
    )
