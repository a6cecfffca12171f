"""Training's speed-up of each GPU over the CPU: arithmetic that the training stage and the runner share."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

from rigcheck.engine.events import Measurement, Status, Verdict


def gpu_over_cpu(figures: Iterable[Measurement], stage: str) -> Iterator[Verdict]:
    """Training's speed-up of each GPU over the CPU, for the same network, batch and precision."""
    by_key: dict[str, dict[str, float]] = defaultdict(dict)
    for m in figures:
        if not m.params.get("broken") and m.name.startswith("train "):
            by_key[m.name.removeprefix("train ")][m.device] = m.value
    for device in sorted({d for rates in by_key.values() for d in rates if d.startswith("cuda")}):
        table = {k: round(r[device] / r["cpu"], 1) for k, r in by_key.items() if device in r and r.get("cpu")}
        if table:
            text = ", ".join(f"{k}: {v}x" for k, v in table.items())
            yield Verdict(
                stage, "speedup", Status.PASS, f"{device} over the CPU: {text}", {"speedup": table}, device=device
            )
