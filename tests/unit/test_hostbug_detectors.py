"""The host-bug hunters: an injected sgemm race and an injected non-repeating convolution are caught and named."""

from __future__ import annotations

import numpy
import torch
from rigcheck.engine.events import Status
from rigcheck.engine.stages.hostbugs.repeatability import repeat_twice
from rigcheck.engine.stages.hostbugs.sgemm_race import hunt, numpy_matmul, thread_counts
from rigcheck.engine.stages.hostbugs.stage import repeat_verdict, sgemm_verdicts, summary


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
