"""Reads `rigcheck run --json` reports: the per-device table of figures, trust counts, and every FAIL."""

from __future__ import annotations

import collections
import json
import sys


def summarize(path: str) -> None:
    with open(path) as f:
        report = json.load(f)
    figures = report["measurements"]
    counts = collections.Counter((m.get("conditions") or {}).get("trust", "none") for m in figures)
    print(f"== {path}: {len(figures)} figures, " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    by_name: dict[str, dict[str, dict]] = collections.defaultdict(dict)
    for m in figures:
        by_name[m["name"]][m["device"]] = m
    devices = sorted({m["device"] for m in figures})
    print("figure".ljust(34) + "".join(d.rjust(22) for d in devices) + ("   ratio" if len(devices) > 1 else ""))
    for name, per in by_name.items():
        cells = []
        for d in devices:
            m = per.get(d)
            if m is None:
                cells.append("".rjust(22))
                continue
            trust = (m.get("conditions") or {}).get("trust", "-")
            cells.append(f"{m['value']:,.4g} {trust[:7]}".rjust(22))
        gpus = [per[d]["value"] for d in devices if d.startswith("cuda") and d in per]
        ratio = f"   {gpus[1] / gpus[0]:.3f}" if len(gpus) == 2 and gpus[0] else ""
        print(name[:34].ljust(34) + "".join(cells) + ratio)
    for m in figures:
        c = m.get("conditions") or {}
        if c.get("trust") not in ("TRUSTED", None):
            print(f"  {c.get('trust')}: {m['name']} on {m['device']}: {'; '.join(c.get('trust_reasons', []))}")
    for v in report["verdicts"]:
        if v["status"] not in ("PASS", "SKIP"):
            print(f"  {v['status']} {v['stage']}/{v.get('check_name')}: {v['explanation'][:300]}")


if __name__ == "__main__":
    for arg in sys.argv[1:]:
        summarize(arg)
