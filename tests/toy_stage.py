"""A toy stage written by the guide alone (docs/ADDING_A_STAGE.md): one figure, one verdict."""

from __future__ import annotations

import time
from collections.abc import Iterator

from rigcheck.engine.events import Event, Measurement, Progress, Status, Verdict
from rigcheck.engine.stage import StageContext


def run(context: StageContext) -> Iterator[Event]:
    spec = context.spec
    yield Progress(spec.stage, 0, 1, "counting")
    start = time.time()
    count = sum(range(200_000))
    elapsed = max(time.time() - start, 1e-6)
    yield Measurement(
        spec.stage, "toy sum", 200_000 / elapsed, "adds/s", repeats=1, device=spec.device,
        params={"bound": "compute", "threads": 1}, t_start=start,
    )  # fmt: skip
    right = count == 199_999 * 200_000 // 2
    yield Verdict(spec.stage, "sum", Status.PASS if right else Status.FAIL, "the sum came out as it should")
