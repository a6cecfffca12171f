"""The board network's training roofline: its conv FLOPs and activation traffic per sample, over a matmul rate and a
copy rate. The parent's roofline verdict (trust/expect_training.py) runs it on a run's own figures; a training share
carried to a sibling GPU (measure/arch_shares.py) runs it on the two GPUs' peaks. Standard library only."""

from __future__ import annotations

import re

BOARD_CELLS = 49  # the 7x7 board (engine/models/board_net.py)
PLANES, BLOCKS = 12, 6
TRAIN_OVER_FORWARD = 3.0  # forward, then backward for inputs and for weights
TENSOR_PASSES = 20  # activation tensors of c x 49 read or written per block per forward pass (convs, norms, relu, add)
_TRAINING = re.compile(r"^train c(\d+) b(\d+) (fp32|bf16)( compiled)?$")


def per_sample(channels: int, precision: str) -> tuple[float, float]:
    """(FLOPs, bytes) of one training sample of the board network."""
    conv = 2.0 * 9 * channels * channels * BOARD_CELLS
    forward = BLOCKS * 2 * conv + 2.0 * 9 * PLANES * channels * BOARD_CELLS
    size = 2 if precision == "bf16" else 4
    traffic = BLOCKS * TENSOR_PASSES * channels * BOARD_CELLS * size
    return TRAIN_OVER_FORWARD * forward, TRAIN_OVER_FORWARD * traffic


def roofline(channels: int, precision: str, tflops: float, copy_gbs: float) -> float:
    """Samples/s if each sample's FLOPs ran at the matmul rate and its traffic at the copy rate, one after the other."""
    flops, traffic = per_sample(channels, precision)
    return 1.0 / (flops / (tflops * 1e12) + traffic / (copy_gbs * 1e9))


def training_tag(name: str) -> tuple[int, int, str] | None:
    """(channels, batch, precision) of a training figure named 'train c64 b256 fp32' (' compiled' after it too);
    None for any other name."""
    found = _TRAINING.match(name)
    return (int(found.group(1)), int(found.group(2)), found.group(3)) if found else None


def figure_flops(name: str) -> float | None:
    """FLOPs of one sample of a training figure named 'train c64 b256 fp32' (None for any other name)."""
    tag = training_tag(name)
    return per_sample(tag[0], tag[2])[0] if tag else None
