"""rigcheck's throughput figures beside a plain torch loop on identical shapes and settings, as ratios.

Run on the GPU machine: python bench/throughput_vs_plain.py [--json FILE]
"""

from __future__ import annotations

import json
import sys
import time

import torch
from rigcheck.engine.models.board_net import BoardNet, BoardNetConfig, loss_fn, random_batch
from rigcheck.engine.stage import StageContext, StageSpec
from rigcheck.engine.stages.matmul.calls import matmul_call
from rigcheck.engine.stages.matmul.search import max_find
from rigcheck.engine.stages.matmul.stage import measure_point, set_tf32
from rigcheck.engine.stages.training import train_rate


def plain_matmul(dtype: str, n: int, device: torch.device, reps: int = 50) -> float:
    """What people write: back-to-back calls between two events, total over count."""
    set_tf32(dtype == "tf32")
    call = matmul_call(dtype, n, n, n, device)
    for _ in range(5):
        call()
    torch.cuda.synchronize()
    rates = []
    for _ in range(5):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(reps):
            call()
        end.record()
        end.synchronize()
        rates.append(2.0 * n**3 * reps / (start.elapsed_time(end) / 1000) / 1e12)
    return sorted(rates)[len(rates) // 2]


def plain_training(channels: int, batch: int, precision: str, device: torch.device, steps: int = 30) -> float:
    torch.manual_seed(0)
    model = BoardNet(BoardNetConfig(channels, 6)).to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data = random_batch(batch, device)
    for i in range(steps + 3):
        if i == 3:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        optimizer.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = loss_fn(model, *data)
        loss.backward()
        optimizer.step()
    torch.cuda.synchronize()
    return batch * steps / (time.perf_counter() - t0)


def main() -> None:
    device = torch.device("cuda:0")
    name = torch.cuda.get_device_name(device)
    rows = []
    print(f"device {name}, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}")
    print(f"{'what':<34}{'rigcheck':>12}{'plain loop':>12}{'ratio':>8}")
    for n in (4096, 8192):
        for dtype in ("bf16", "fp16", "tf32", "fp32"):
            # A B B A with pauses: the H200 reaches its 700 W cap on long bursts, so order matters
            ours, plain = [], []
            for first in (True, False):
                for mine in (first, not first):
                    time.sleep(0.5)
                    if mine:
                        ours.append(measure_point(dtype, n, n, n, device, name).value)
                    else:
                        plain.append(plain_matmul(dtype, n, device))
            rows.append({"what": f"matmul {dtype} {n} TFLOP/s", "rigcheck": sum(ours) / 2, "plain": sum(plain) / 2})
    set_tf32(False)
    for channels, batch, precision in ((128, 8192, "bf16"), (128, 8192, "fp32"), (128, 1024, "fp32")):
        ours = train_rate(channels, batch, precision, device, min_seconds=1.0)[0]
        plain = plain_training(channels, batch, precision, device)
        rows.append({"what": f"train c{channels} b{batch} {precision} samples/s", "rigcheck": ours, "plain": plain})
    for row in rows:
        row["ratio"] = row["rigcheck"] / row["plain"]
        print(f"{row['what']:<34}{row['rigcheck']:>12,.1f}{row['plain']:>12,.1f}{row['ratio']:>8.3f}")
    eager = train_rate(128, 4096, "bf16", device, min_seconds=1.0)[0]
    t0 = time.perf_counter()
    compiled = train_rate(128, 4096, "bf16", device, compiled=True, min_seconds=1.0)[0]
    compile_s = time.perf_counter() - t0
    print(
        f"train c128 b4096 bf16: eager {eager:,.0f}, compiled+channels_last {compiled:,.0f} samples/s, "
        f"{compiled / eager:.2f}x (compile and measure {compile_s:.0f} s)"
    )
    t0 = time.monotonic()
    found = [
        e for e in max_find(StageContext(StageSpec("matmul", "cuda:0", "full")), device, 60.0) if hasattr(e, "status")
    ]
    print(f"max-find: {found[-1].explanation} (wall {time.monotonic() - t0:.0f} s)")
    if "--json" in sys.argv:
        out = {"device": name, "torch": torch.__version__, "rows": rows, "eager": eager, "compiled": compiled}
        out["max_find"] = found[-1].numbers
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as handle:
            json.dump(out, handle, indent=1)


if __name__ == "__main__":
    main()
