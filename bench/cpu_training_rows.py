"""Issue 40, item 5: a CPU's training figures as rows for engine/measure/references.json (kind "cpu training"), the
median of several runs of `rigcheck run training --device cpu --json`, each figure with the limit it ran against.
Usage: python3 bench/cpu_training_rows.py SOURCE_ID REPORT.json [REPORT.json ...]

A row's peak is the host's fp32 compute limit in GFLOP/s (cores x clock x FLOP/cycle, the CPU model's `cpu_fp32`
peak), recovered from the figure's own limit in samples/s times the board network's FLOPs per sample."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from rigcheck.engine.facts.cpu_reference import this_capability
from rigcheck.engine.facts.host import cpu_facts
from rigcheck.engine.measure.board_roofline import figure_flops


def main(source: str, paths: list[str]) -> None:
    runs: dict[str, list[tuple[float, float, str]]] = {}
    for path in paths:
        for m in json.loads(Path(path).read_text())["measurements"]:
            p, c = m.get("params") or {}, m.get("conditions") or {}
            if m["device"] != "cpu" or m["unit"] != "samples/s" or not p.get("limit") or p.get("broken"):
                continue
            flops = figure_flops(m["name"]) or 0.0
            runs.setdefault(m["name"], []).append((m["value"], p["limit"] * flops / 1e9, str(c.get("trust"))))
    print(f"   CPU: {cpu_facts().get('model')} ({this_capability()}), {cpu_facts().get('logical_cpus')} CPUs")
    for name, seen in runs.items():
        values = [v for v, _, _ in seen]
        peak = round(statistics.median(g for _, g, _ in seen), 1)
        value = round(statistics.median(values), 1)
        share = value * (figure_flops(name) or 0.0) / 1e9 / peak
        spread = (max(values) - min(values)) / value
        print(f"   {name}: runs {[round(v) for v in values]} trust {[t for _, _, t in seen]}, spread {spread:.0%}, "
              f"{share:.1%} of {peak} GFLOP/s")  # fmt: skip
        row = {
            "model": cpu_facts().get("model"), "figure": name, "kind": "cpu training", "value": value,
            "unit": "samples/s", "source": source, "peak": peak, "peak_of": "cpu_fp32",
            "size": " ".join(name.split()[1:3]), "dtype": name.split()[3],
            "note": f"median of {len(values)} runs; spread {spread:.0%}",
        }  # fmt: skip
        print("   " + json.dumps(row) + ",")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
