"""The board network: a 7x7 board as 12 input planes, residual blocks, a policy head and a value head.

GroupNorm by default; BatchNorm as an option (the seed's ROCm build failed only with BatchNorm in
training mode). Imports torch: only stage children use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.nn import functional

BOARD = 7
PLANES = 12
MOVES = BOARD * BOARD


@dataclass(frozen=True)
class BoardNetConfig:
    channels: int = 128
    blocks: int = 6
    norm: str = "group"  # group | batch


def _norm(kind: str, channels: int) -> nn.Module:
    if kind == "batch":
        return nn.BatchNorm2d(channels)
    return nn.GroupNorm(min(8, channels), channels)


class ResidualBlock(nn.Module):
    def __init__(self, channels: int, norm: str) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.norm1 = _norm(norm, channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.norm2 = _norm(norm, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = functional.relu(self.norm1(self.conv1(x)))
        return functional.relu(x + self.norm2(self.conv2(y)))


class BoardNet(nn.Module):
    def __init__(self, config: BoardNetConfig = BoardNetConfig()) -> None:
        super().__init__()
        c = config.channels
        self.stem = nn.Sequential(nn.Conv2d(PLANES, c, 3, padding=1, bias=False), _norm(config.norm, c), nn.ReLU())
        self.blocks = nn.Sequential(*(ResidualBlock(c, config.norm) for _ in range(config.blocks)))
        self.policy_conv = nn.Conv2d(c, 2, 1)
        self.policy_fc = nn.Linear(2 * MOVES, MOVES)
        self.value_conv = nn.Conv2d(c, 1, 1)
        self.value_fc1 = nn.Linear(MOVES, c)
        self.value_fc2 = nn.Linear(c, 1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.blocks(self.stem(x))
        policy = self.policy_fc(functional.relu(self.policy_conv(h)).flatten(1))
        value = functional.relu(self.value_fc1(functional.relu(self.value_conv(h)).flatten(1)))
        return policy, torch.tanh(self.value_fc2(value)).squeeze(1)


def parameter_count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def random_batch(batch: int, device: Any, generator: torch.Generator | None = None) -> tuple[torch.Tensor, ...]:
    """Random boards (0/1 planes), a target move per board and a target value in [-1, 1]."""
    boards = (torch.rand(batch, PLANES, BOARD, BOARD, generator=generator) < 0.3).float()
    moves = torch.randint(0, MOVES, (batch,), generator=generator)
    values = torch.rand(batch, generator=generator) * 2 - 1
    return boards.to(device), moves.to(device), values.to(device)


def loss_fn(model: nn.Module, boards: torch.Tensor, moves: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    policy, value = model(boards)
    if policy.dtype in (torch.float16, torch.bfloat16):  # autocast: take the loss in float32
        policy, value = policy.float(), value.float()
    return functional.cross_entropy(policy, moves) + functional.mse_loss(value, values.to(value.dtype))
