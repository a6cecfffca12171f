"""Every Verify detector: the fault it exists to catch is injected and seen, and the clean case passes."""

from __future__ import annotations

import math

import torch
from rigcheck.engine.events import Status
from rigcheck.engine.models.board_net import BoardNetConfig
from rigcheck.engine.stages.common.numerics import float64_matmul, rel_error, within
from rigcheck.engine.stages.verify.matmul import (
    check_dtype,
    check_reference,
    device_matmul_into_poison,
    numpy_float32_matmul,
)
from rigcheck.engine.stages.verify.model import (
    check_batchnorm_training,
    check_forward_and_gradients,
    check_soak,
    check_steps,
)

CPU = torch.device("cpu")
SMALL = BoardNetConfig(16, 1)


def gen() -> torch.Generator:
    return torch.Generator().manual_seed(3)


def good_device() -> object:
    return device_matmul_into_poison(torch.float32, CPU)


def corrupting(matmul):  # type: ignore[no-untyped-def]
    """Wrong elements off by about 10, as the seed's sgemm returned."""

    def run(a, b):  # type: ignore[no-untyped-def]
        out = matmul(a, b).clone()
        out[::37, ::41] += 10.0
        return out

    return run


def test_clean_reference_repeats() -> None:
    assert check_reference(128, gen()).status == Status.PASS


def test_a_reference_that_does_not_repeat_is_declared_unusable() -> None:
    calls = []

    def flaky(a, b):  # type: ignore[no-untyped-def]
        calls.append(1)
        out = float64_matmul(a, b)
        if len(calls) % 2 == 0:
            out[0, 0] += 1e-9
        return out

    verdict = check_reference(128, gen(), flaky)
    assert verdict.status == Status.FAIL
    assert "unusable" in verdict.explanation and "not the device" in verdict.explanation


def test_clean_fp32_passes_without_attribution() -> None:
    verdicts = list(check_dtype("fp32", 128, "cpu", gen(), good_device(), numpy_float32_matmul, "numpy"))
    assert [v.status for v in verdicts] == [Status.PASS]
    assert verdicts[0].numbers["rel_error"] < 1e-6


def test_wrong_device_fails_and_is_blamed() -> None:
    verdicts = list(check_dtype("fp32", 128, "cuda:0", gen(), corrupting(good_device()), numpy_float32_matmul, "numpy"))
    assert [v.check for v in verdicts] == ["matmul-fp32", "attribution-fp32"]
    assert verdicts[0].status == Status.FAIL
    assert "cuda:0 is wrong; numpy agrees with float64" in verdicts[1].explanation


def test_wrong_cpu_reference_is_blamed_not_the_device() -> None:
    verdicts = list(check_dtype("fp32", 128, "cuda:0", gen(), good_device(), corrupting(numpy_float32_matmul), "numpy"))
    assert verdicts[0].status == Status.PASS  # the device is right
    assert verdicts[1].status == Status.FAIL
    assert "numpy is wrong; cuda:0 agrees with float64" in verdicts[1].explanation


def test_unwritten_output_elements_fail() -> None:
    def skips_a_row(a, b):  # type: ignore[no-untyped-def]
        out = torch.full((a.shape[0], b.shape[1]), float("nan"))
        out[1:] = a[1:] @ b
        return out

    verdict = next(check_dtype("fp32", 64, "cpu", gen(), skips_a_row, numpy_float32_matmul, "numpy"))
    assert verdict.status == Status.FAIL and "64 output elements were never written" in verdict.explanation


def test_a_device_that_returns_nan_fails() -> None:
    def nan_device(a, b):  # type: ignore[no-untyped-def]
        out = a @ b
        out[7, 7] = float("nan")
        return out

    verdict = next(check_dtype("fp32", 64, "cuda:0", gen(), nan_device, numpy_float32_matmul, "numpy"))
    assert verdict.status == Status.FAIL and "relative error nan" in verdict.explanation


def test_nan_and_inf_never_pass() -> None:
    ref = torch.ones(4, 4, dtype=torch.float64)
    assert math.isnan(rel_error(torch.full((4, 4), math.inf), ref))
    assert not within(math.nan, 1.0) and not within(math.inf, 1.0)


def test_bf16_within_its_tolerance() -> None:
    device = device_matmul_into_poison(torch.bfloat16, CPU)
    verdict = next(check_dtype("bf16", 256, "cpu", gen(), device, numpy_float32_matmul, "numpy"))
    assert verdict.status == Status.PASS and 1e-4 < verdict.numbers["rel_error"] < 1e-2


def test_model_forward_and_gradients_clean_then_tampered() -> None:
    clean = list(check_forward_and_gradients(SMALL, 8, CPU))
    assert [v.status for v in clean] == [Status.PASS, Status.PASS]

    def nudge(model):  # type: ignore[no-untyped-def]
        with torch.no_grad():
            model.policy_fc.weight.mul_(1.01)

    tampered = list(check_forward_and_gradients(SMALL, 8, CPU, tamper=nudge))
    assert tampered[0].status == Status.FAIL and tampered[1].status == Status.FAIL


def test_steps_change_weights() -> None:
    assert check_steps(SMALL, 8, CPU).status == Status.PASS


def test_steps_that_leave_a_weight_unchanged_or_not_finite_fail(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    class SkipsFirst(torch.optim.SGD):
        """Updates every parameter tensor but the first, as a lost gradient would."""

        def step(self, closure=None):  # type: ignore[no-untyped-def, override]
            kept = self.param_groups[0]["params"][0].detach().clone()
            super().step(closure)
            self.param_groups[0]["params"][0].data.copy_(kept)

    monkeypatch.setattr(torch.optim, "SGD", SkipsFirst)
    stuck = check_steps(SMALL, 8, CPU)
    assert stuck.status == Status.FAIL, stuck.explanation
    assert stuck.numbers["changed"] == stuck.numbers["total"] - 1 and stuck.numbers["finite"] is True

    class Poison(SkipsFirst.__mro__[1]):  # the real SGD, then one weight made NaN
        def step(self, closure=None):  # type: ignore[no-untyped-def, override]
            super().step(closure)
            self.param_groups[0]["params"][-1].data[0] = float("nan")

    monkeypatch.setattr(torch.optim, "SGD", Poison)
    poisoned = check_steps(SMALL, 8, CPU)
    assert poisoned.status == Status.FAIL and poisoned.numbers["finite"] is False
    assert poisoned.numbers["changed"] == poisoned.numbers["total"]
    assert check_batchnorm_training(SMALL, 8, CPU).status == Status.WARN  # a failed step under BatchNorm warns


def test_batchnorm_failure_is_a_warn_naming_groupnorm(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def broken(self, x):  # type: ignore[no-untyped-def]
        raise RuntimeError("miopenStatusUnknownError in batch_norm training")

    monkeypatch.setattr(torch.nn.BatchNorm2d, "forward", broken)
    verdict = check_batchnorm_training(SMALL, 8, CPU)
    assert verdict.status == Status.WARN
    assert "miopenStatusUnknownError" in verdict.explanation and "GroupNorm" in verdict.explanation
    monkeypatch.undo()
    assert check_batchnorm_training(SMALL, 8, CPU).status == Status.PASS


def test_soak_learns_and_catches_a_network_that_does_not() -> None:
    learns = check_soak(BoardNetConfig(16, 1), 32, 60, CPU)
    assert learns.status == Status.PASS and learns.numbers["factor"] >= 20
    assert learns.numbers["factor"] == learns.numbers["first_loss"] / learns.numbers["last_loss"]

    frozen = check_soak(BoardNetConfig(16, 1), 32, 30, CPU, lambda p: torch.optim.SGD(p, lr=0.0))
    assert frozen.status == Status.FAIL and "did not learn" in frozen.explanation

    class Poison(torch.optim.SGD):
        def step(self, closure=None):  # type: ignore[no-untyped-def, override]
            for group in self.param_groups:
                for p in group["params"]:
                    p.data.fill_(float("nan"))

    poisoned = check_soak(BoardNetConfig(16, 1), 32, 30, CPU, lambda p: Poison(p, lr=0.1))
    assert poisoned.status == Status.FAIL and "NaN or Inf" in poisoned.explanation
    assert poisoned.numbers["step"] == 0 and math.isfinite(poisoned.numbers["first_loss"])  # the loss before it

    class LatePoison(torch.optim.SGD):
        """Sound for 25 steps, then NaN: found at the next check, every 25 steps."""

        steps = 0

        def step(self, closure=None):  # type: ignore[no-untyped-def, override]
            super().step(closure)
            LatePoison.steps += 1
            if LatePoison.steps > 25:
                for p in self.param_groups[0]["params"]:
                    p.data.fill_(float("nan"))

    late = check_soak(BoardNetConfig(16, 1), 32, 60, CPU, lambda p: LatePoison(p, lr=0.01))
    assert late.status == Status.FAIL and late.numbers["step"] == 25, late.explanation


def test_a_parameter_whose_float64_gradient_is_all_zero_passes(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A weight the loss does not depend on has a zero gradient in both copies: nothing to compare, not a
    relative error of 0/0."""
    from rigcheck.engine.models.board_net import BoardNet
    from rigcheck.engine.stages.verify import model as verify_model

    class WithIdleWeight(BoardNet):
        def __init__(self, config: BoardNetConfig) -> None:
            super().__init__(config)
            self.idle = torch.nn.Parameter(torch.ones(3))

        def forward(self, boards):  # type: ignore[no-untyped-def, override]
            policy, value = super().forward(boards)
            return policy, value + 0.0 * self.idle.sum()

    monkeypatch.setattr(verify_model, "BoardNet", WithIdleWeight)
    forward, gradients = list(check_forward_and_gradients(SMALL, 8, CPU))
    assert (forward.status, gradients.status) == (Status.PASS, Status.PASS), gradients.explanation
