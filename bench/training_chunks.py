"""Training figures three ways in one process, alternated: rigcheck's train_rate (chunks that stop once they
agree), the loop it replaced (3 warm-up steps, then at least 5 steps and 0.5 s), and a plain loop written here
(10 warm-up steps, then 1 s), to see whether the chunked figure of a host-bound batch is biased.
Usage: python3 bench/training_chunks.py [DEVICE]"""

from __future__ import annotations

import sys
import time
from contextlib import nullcontext

import torch
from rigcheck.engine.models.board_net import BoardNet, BoardNetConfig, loss_fn, random_batch
from rigcheck.engine.stages.training import BLOCKS, train_rate


def loop(
    channels: int, batch: int, precision: str, device: torch.device, warmup: int, min_steps: int, seconds: float
) -> float:
    """Samples/s of SGD steps: `warmup` steps, then at least `min_steps` and `seconds`, one sync at the end."""
    torch.manual_seed(0)
    model = BoardNet(BoardNetConfig(channels, BLOCKS)).to(device).train()
    data = random_batch(batch, device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16) if precision == "bf16" else nullcontext()
    for index in range(warmup + 10**9):
        if index == warmup:
            torch.cuda.synchronize(device)
            t0, steps = time.perf_counter(), 0
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss = loss_fn(model, *data)
        loss.backward()
        optimizer.step()
        if index >= warmup:
            steps += 1
            if steps >= min_steps and time.perf_counter() - t0 >= seconds:
                break
    torch.cuda.synchronize(device)
    return batch * steps / (time.perf_counter() - t0)


def main(device_name: str) -> None:
    device = torch.device(device_name)
    for channels, batch, precision in (
        (64, 256, "bf16"),
        (64, 1024, "fp32"),
        (64, 1024, "bf16"),
        (128, 256, "fp32"),
        (64, 4096, "bf16"),
    ):
        row = []
        for _ in range(2):
            plain = loop(channels, batch, precision, device, 10, 1, 1.0)
            chunks = train_rate(channels, batch, precision, device)[0]
            replaced = loop(channels, batch, precision, device, 3, 5, 0.5)
            row += [plain, chunks, replaced]
        cells = " ".join(f"{v:10.4g}" for v in row)
        ratios = f"chunks/plain {row[1] / row[0]:.3f} {row[4] / row[3]:.3f}"
        print(f"c{channels} b{batch} {precision:5} plain/chunks/replaced x2: {cells}  {ratios}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cuda:0")
