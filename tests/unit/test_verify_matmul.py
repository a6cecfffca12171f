"""engine/stages/verify/matmul.py to the word: fp16 is checked as bf16 is, each against bounds tight enough that
the two roundings cannot swap unseen (measured at 256: fp16 2.1e-4, bf16 1.7e-3 relative error), the inputs
each side sees are the generator's matrices rounded to the dtype, the poison shows unwritten elements, the TF32
switch is set only for the call, and every verdict's words, numbers and tolerance."""

from __future__ import annotations

import pytest
import torch
from rigcheck.engine.events import Status
from rigcheck.engine.stages.common.numerics import TOLERANCES, float64_matmul
from rigcheck.engine.stages.verify import matmul as verify_matmul
from rigcheck.engine.stages.verify.matmul import (
    STAGE,
    check_dtype,
    check_reference,
    device_matmul_into_poison,
    numpy_float32_matmul,
    torch_cpu_float32_matmul,
)

CPU = torch.device("cpu")
HALF = {"fp16": torch.float16, "bf16": torch.bfloat16}


def gen(seed: int = 26) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize(("name", "low", "high"), [("fp16", 1.5e-4, 2.8e-4), ("bf16", 1.2e-3, 2.2e-3)])
def test_half_precision_errors_sit_where_their_rounding_puts_them(name: str, low: float, high: float) -> None:
    """A device in fp16 or bf16 against float64 on the same rounded inputs: only the output's rounding is left.
    fp16 inputs not rounded first read 3.6e-4; bf16 inputs rounded as fp16, or not at all, read 2.9e-3."""
    verdicts = list(
        check_dtype(name, 256, "cpu", gen(), device_matmul_into_poison(HALF[name], CPU), numpy_float32_matmul, "numpy")
    )
    assert [(v.check, v.status) for v in verdicts] == [(f"matmul-{name}", Status.PASS)]
    error = verdicts[0].numbers["rel_error"]
    assert low < error < high, error
    assert verdicts[0].numbers["cpu_rel_error"] < 1e-6  # fp32 on the same rounded inputs
    assert verdicts[0].tolerance == TOLERANCES[name]


@pytest.mark.parametrize("name", ["".join(["fp", "16"]), "".join(["bf", "16"])])  # not the interned literals
def test_both_sides_see_the_generators_matrices_rounded_to_the_dtype(name: str) -> None:
    expected = gen()
    a, b = torch.randn(32, 32, generator=expected), torch.randn(32, 32, generator=expected)
    want = (a.to(HALF[name]).float(), b.to(HALF[name]).float())
    seen: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}

    def spy(label: str):  # type: ignore[no-untyped-def]
        def run(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            seen[label] = (x, y)
            return float64_matmul(x, y).float()

        return run

    list(check_dtype(name, 32, "cpu", gen(), spy("device"), spy("cpu"), "numpy", reference=spy("reference")))
    for label in ("device", "cpu"):
        assert torch.equal(seen[label][0], want[0]) and torch.equal(seen[label][1], want[1]), label
    # fp32 is not rounded
    unrounded: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    seen = unrounded
    list(check_dtype("fp32", 32, "cpu", gen(), spy("device"), spy("cpu"), "numpy", reference=spy("reference")))
    assert torch.equal(unrounded["device"][0], a) and torch.equal(unrounded["device"][1], b)


def test_a_clean_dtype_is_one_pass_verdict_with_every_number() -> None:
    [verdict] = check_dtype(
        "fp32", 64, "cuda:0", gen(), device_matmul_into_poison(torch.float32, CPU), numpy_float32_matmul, "numpy"
    )
    assert (verdict.stage, verdict.check, verdict.status, verdict.device) == (
        STAGE,
        "matmul-fp32",
        Status.PASS,
        "cuda:0",
    )
    error = verdict.numbers["rel_error"]
    assert verdict.explanation == f"fp32 64x64 on cuda:0: relative error {error:.2e} against float64 (tolerance 1e-05)"
    assert verdict.numbers == {
        "n": 64,
        "dtype": "fp32",
        "rel_error": error,
        "cpu_rel_error": verdict.numbers["cpu_rel_error"],
        "unwritten": 0,
    }
    assert verdict.tolerance == 1e-5 and STAGE == "verify"


def test_a_device_off_by_more_than_its_tolerance_fails_and_the_blame_names_it() -> None:
    def off(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a @ b) * (1 + 2e-5)  # twice the fp32 tolerance

    check, blame = check_dtype("fp32", 64, "cuda:0", gen(), off, numpy_float32_matmul, "numpy")
    assert check.status == Status.FAIL and check.numbers["rel_error"] == pytest.approx(2e-5, rel=0.05)
    assert (blame.check, blame.status, blame.device, blame.tolerance) == (
        "attribution-fp32",
        Status.FAIL,
        "cuda:0",
        1e-5,
    )
    assert blame.numbers["blame"] == "cuda:0 is wrong; numpy agrees with float64"
    assert blame.numbers["disagreement"] == pytest.approx(2e-5, rel=0.05)
    assert blame.explanation.startswith(
        "cuda:0 and numpy disagree by 2.00e-05; against float64 cuda:0 is off by 2.00e-05 and numpy by "
    )
    assert blame.explanation.endswith(": cuda:0 is wrong; numpy agrees with float64")
    assert {k: blame.numbers[k] for k in check.numbers} == check.numbers
    # just inside the tolerance: a pass, and no blame
    inside = list(
        check_dtype("fp32", 64, "cuda:0", gen(), lambda a, b: (a @ b) * (1 + 0.9e-5), numpy_float32_matmul, "numpy")
    )
    assert [v.status for v in inside] == [Status.PASS]


def test_both_arms_off_are_both_named() -> None:
    def off(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a @ b) * 1.001

    verdicts = list(check_dtype("fp32", 32, "cuda:0", gen(), off, off, "numpy"))
    assert verdicts[0].status == Status.FAIL
    assert verdicts[1].numbers["blame"] == "both cuda:0 and numpy are off from float64"


def test_unwritten_elements_fail_even_when_the_rest_is_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    real = torch.matmul

    def writes_all_but_one_row(a, b, out=None):  # type: ignore[no-untyped-def]
        full = real(a, b)
        out[1:] = full[1:]
        return out

    monkeypatch.setattr(torch, "matmul", writes_all_but_one_row)
    result = device_matmul_into_poison(torch.float32, CPU)(torch.ones(3, 4), torch.ones(4, 5))  # not square
    assert result.shape == (3, 5) and result.dtype == torch.float32 and int(torch.isnan(result).sum()) == 5
    assert torch.equal(result[1:], torch.full((2, 5), 4.0))
    verdict = next(
        check_dtype(
            "fp32", 16, "cpu", gen(), device_matmul_into_poison(torch.float32, CPU), torch_cpu_float32_matmul, "torch"
        )
    )
    assert verdict.status == Status.FAIL and verdict.numbers["unwritten"] == 16
    assert verdict.explanation.endswith("; 16 output elements were never written (tolerance 1e-05)")


def test_tf32_is_on_only_for_the_call_and_restored_after_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []
    real = torch.matmul

    def records(a, b, out=None):  # type: ignore[no-untyped-def]
        seen.append(torch.backends.cuda.matmul.allow_tf32)
        if a.shape[0] == 3:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        return real(a, b, out=out)

    monkeypatch.setattr(torch, "matmul", records)
    before = torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cuda.matmul.allow_tf32 = False
        device_matmul_into_poison(torch.float32, CPU, tf32=True)(torch.ones(2, 2), torch.ones(2, 2))
        device_matmul_into_poison(torch.float32, CPU)(torch.ones(2, 2), torch.ones(2, 2))
        assert seen == [True, False] and torch.backends.cuda.matmul.allow_tf32 is False
        with pytest.raises(RuntimeError):
            device_matmul_into_poison(torch.float32, CPU, tf32=True)(torch.ones(3, 3), torch.ones(3, 3))
        assert torch.backends.cuda.matmul.allow_tf32 is False
        torch.backends.cuda.matmul.allow_tf32 = True
        device_matmul_into_poison(torch.float32, CPU)(torch.ones(2, 2), torch.ones(2, 2))
        assert seen[-1] is False and torch.backends.cuda.matmul.allow_tf32 is True
    finally:
        torch.backends.cuda.matmul.allow_tf32 = before


def test_the_cpu_arms_multiply_in_float32() -> None:
    a = torch.randn(8, 8, generator=gen(), dtype=torch.float64)
    for arm in (numpy_float32_matmul, torch_cpu_float32_matmul):
        out = arm(a, a)
        assert out.dtype == torch.float32 and torch.allclose(out.double(), a @ a, rtol=1e-5, atol=1e-5)
    assert verify_matmul.numpy_float32_matmul is numpy_float32_matmul


def test_the_reference_verdicts_words_and_numbers() -> None:
    clean = check_reference(32, gen())
    assert (clean.stage, clean.check, clean.status) == (STAGE, "reference-32", Status.PASS)
    assert clean.explanation == "the float64 CPU reference at 32x32 is bit-identical on repeat"
    assert clean.numbers == {"n": 32}
    calls: list[int] = []

    def flaky(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        calls.append(1)
        out = float64_matmul(a, b)
        if len(calls) == 2:
            out[:8, :8] += 1e-9  # 64 of 1024 elements: 6.25%
        return out

    broken = check_reference(32, gen(), flaky)
    assert (broken.check, broken.status) == ("reference-32", Status.FAIL)
    assert broken.explanation == (
        "the float64 CPU reference at 32x32 does not repeat (6.25% of elements differ): it is unusable, so no "
        "device can be judged against it (the CPU side is at fault, not the device)"
    )
    assert broken.numbers == {"n": 32, "differing_fraction": 0.0625}
