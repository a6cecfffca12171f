"""Verify's model-level checks on the board network: forward and gradients against float64, steps, soak."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

import torch
from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.models.board_net import BoardNet, BoardNetConfig, loss_fn, random_batch
from rigcheck.engine.stages.common.numerics import rel_error, within
from torch import nn

STAGE = "verify"
FORWARD_TOL = 1e-4
GRADIENT_TOL = 1e-3


@dataclass(frozen=True)
class ModelCase:
    """The board net on the device, its float64 copy taken before any tampering, and one batch on the CPU."""

    model: nn.Module
    model64: nn.Module
    boards: torch.Tensor
    moves: torch.Tensor
    values: torch.Tensor


def model_case(
    config: BoardNetConfig, batch: int, device: torch.device, tamper: Callable[[nn.Module], None] | None = None
) -> ModelCase:
    """Seeds the process's generator: call it from the thread that runs the stage, never beside other work."""
    generator = torch.Generator().manual_seed(7)
    torch.manual_seed(7)
    model = BoardNet(config)
    model64 = copy.deepcopy(model).double()
    model = model.to(device)
    if tamper is not None:
        tamper(model)
    return ModelCase(model, model64, *random_batch(batch, "cpu", generator))


def float64_pass(case: ModelCase) -> tuple[torch.Tensor, torch.Tensor]:
    """CPU only, so it can run beside the device's pass: the float64 copy's outputs; its gradients stay on it."""
    policy64, value64 = case.model64(case.boards.double())
    loss_fn(case.model64, case.boards.double(), case.moves, case.values.double()).backward()
    return policy64, value64


def device_pass(case: ModelCase, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """The device copy's outputs; its gradients stay on it."""
    policy, value = case.model(case.boards.to(device))
    loss_fn(case.model, case.boards.to(device), case.moves.to(device), case.values.to(device)).backward()
    return policy, value


def check_forward_and_gradients(
    config: BoardNetConfig, batch: int, device: torch.device, tamper: Callable[[nn.Module], None] | None = None
) -> Iterator[Verdict]:
    """In line. `tamper` changes the device copy after the float64 copy is taken (tests inject faults with it)."""
    case = model_case(config, batch, device, tamper)
    outputs = device_pass(case, device)
    yield from judge_model(case, config, str(device), outputs, float64_pass(case))


def judge_model(
    case: ModelCase,
    config: BoardNetConfig,
    label: str,
    outputs: tuple[torch.Tensor, torch.Tensor],
    outputs64: tuple[torch.Tensor, torch.Tensor],
) -> Iterator[Verdict]:
    """Forward and gradients of the device copy against the float64 copy, once both passes have run."""
    (policy, value), (policy64, value64) = outputs, outputs64
    forward_error = max(rel_error(policy, policy64), rel_error(value, value64))
    yield Verdict(
        STAGE,
        "model-forward",
        Status.PASS if within(forward_error, FORWARD_TOL) else Status.FAIL,
        f"board net (c{config.channels}, {config.norm}norm) forward on {label}: relative error "
        f"{forward_error:.2e} against a float64 copy (tolerance {FORWARD_TOL:g})",
        {"rel_error": forward_error},
        tolerance=FORWARD_TOL,
        device=label,
    )
    worst_name, worst = "", 0.0
    for (name, p), p64 in zip(case.model.named_parameters(), case.model64.parameters(), strict=True):
        grad, grad64 = p.grad, p64.grad
        assert grad is not None and grad64 is not None  # backward() above gave every parameter its gradient
        error = rel_error(grad, grad64) if grad64.abs().sum() > 0 else 0.0
        if not math.isfinite(error) or error > worst:
            worst_name, worst = name, error
        if not math.isfinite(error):
            break
    yield Verdict(
        STAGE,
        "model-gradients",
        Status.PASS if within(worst, GRADIENT_TOL) else Status.FAIL,
        f"gradients on {label}: worst relative error {worst:.2e} against float64 ({worst_name or 'all'}; "
        f"tolerance {GRADIENT_TOL:g})",
        {"worst_rel_error": worst, "worst_parameter": worst_name},
        tolerance=GRADIENT_TOL,
        device=label,
    )


def check_steps(config: BoardNetConfig, batch: int, device: torch.device, steps: int = 5) -> Verdict:
    """A few optimizer steps must change the weights and leave them finite."""
    model = BoardNet(config).to(device).train()
    before = [p.detach().clone() for p in model.parameters()]
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for _ in range(steps):
        batch_data = random_batch(batch, device)
        optimizer.zero_grad()
        loss_fn(model, *batch_data).backward()
        optimizer.step()
    changed = sum(int(not torch.equal(b, p.detach())) for b, p in zip(before, model.parameters(), strict=True))
    finite = all(torch.isfinite(p).all().item() for p in model.parameters())
    total = len(before)
    ok = finite and changed == total
    return Verdict(
        STAGE,
        f"model-steps-{config.norm}norm",
        Status.PASS if ok else Status.FAIL,
        f"{steps} optimizer steps ({config.norm}norm, training mode) on {device}: {changed} of {total} "
        f"parameter tensors changed, all finite: {finite}",
        {"changed": changed, "total": total, "finite": finite},
        device=str(device),
    )


def check_batchnorm_training(config: BoardNetConfig, batch: int, device: torch.device) -> Verdict:
    """BatchNorm in training mode; a failure is a WARN naming GroupNorm as the workaround."""
    bn_config = BoardNetConfig(config.channels, config.blocks, "batch")
    try:
        verdict = check_steps(bn_config, batch, device)
    except Exception as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return Verdict(
            STAGE,
            "model-steps-batchnorm",
            Status.WARN,
            f"BatchNorm in training mode failed on {device}: {type(error).__name__}: {first[:200]}; "
            "use GroupNorm (rigcheck's default) as the workaround",
            {"error": f"{type(error).__name__}: {first[:500]}"},
            device=str(device),
        )
    if verdict.status != Status.PASS:
        return Verdict(
            verdict.stage,
            verdict.check,
            Status.WARN,
            verdict.explanation + "; use GroupNorm (rigcheck's default) as the workaround",
            verdict.numbers,
            device=verdict.device,
        )
    return verdict


def adam(parameters: Iterable[nn.Parameter]) -> torch.optim.Optimizer:
    return torch.optim.Adam(parameters, lr=1e-3)


def check_soak(
    config: BoardNetConfig,
    batch: int,
    steps: int,
    device: torch.device,
    optimizer_factory: Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer] = adam,
) -> Verdict:
    """Many steps on one fixed batch: every parameter stays finite and the loss falls by a large factor."""
    for item in soak(config, batch, steps, device, optimizer_factory):
        if isinstance(item, Verdict):
            return item
    raise RuntimeError("the soak ended without a verdict")  # soak() always ends on one


def soak(
    config: BoardNetConfig,
    batch: int,
    steps: int,
    device: torch.device,
    optimizer_factory: Callable[[Iterable[nn.Parameter]], torch.optim.Optimizer] = adam,
) -> Iterator[int | Verdict]:
    """check_soak's steps as it takes them: the number of steps done after each one, then its verdict (the stage
    turns the numbers into progress: a soak on a busy host takes minutes)."""
    torch.manual_seed(11)
    model = BoardNet(config).to(device).train()
    optimizer = optimizer_factory(model.parameters())
    data = random_batch(batch, device, torch.Generator().manual_seed(11))
    first = last = math.nan
    for step in range(steps):
        optimizer.zero_grad()
        loss = loss_fn(model, *data)
        loss.backward()
        optimizer.step()
        yield step + 1
        if step == 0:
            first = loss.item()
        if step % 25 == 0 or step == steps - 1:
            last = loss.item()
            if not all(torch.isfinite(p).all().item() for p in model.parameters()):
                yield Verdict(
                    STAGE,
                    "model-soak",
                    Status.FAIL,
                    f"a parameter became NaN or Inf at step {step} of the soak on {device}",
                    {"step": step, "first_loss": first},
                    device=str(device),
                )
                return
    factor = first / last if last > 0 else math.inf
    ok = math.isfinite(first) and factor >= 20
    yield Verdict(
        STAGE,
        "model-soak",
        Status.PASS if ok else Status.FAIL,
        f"soak of {steps} steps on one batch of {batch} on {device}: loss {first:.3f} -> {last:.4f} "
        f"(fell {factor:.0f}x; the network {'learns' if ok else 'did not learn'})",
        {"first_loss": first, "last_loss": last, "factor": factor, "steps": steps},
        device=str(device),
    )
