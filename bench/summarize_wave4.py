"""Prints a --json report's figures (value, unit, trust) and its verdict counts, for bench/RESULTS.md."""

from __future__ import annotations

import collections
import json
import pathlib
import sys

report = json.loads(pathlib.Path(sys.argv[1]).read_text())
labels: collections.Counter[str] = collections.Counter()
for m in report.get("measurements", []):
    trust = (m.get("conditions") or {}).get("trust", "?")
    labels[trust] += 1
    spread, value = m.get("spread"), m.get("value")
    spread_words = f" ±{spread / value:.1%}" if isinstance(spread, float) and value else ""
    where = f"{m.get('stage')}/{m.get('name')} {m.get('device')}"
    print(f"  {where}: {value:.4g} {m.get('unit')}{spread_words} {trust}")
statuses = collections.Counter(v["status"] for v in report.get("verdicts", []))
print("trust:", dict(labels), "verdicts:", dict(statuses))
for v in report.get("verdicts", []):
    if v["status"] not in ("PASS", "SKIP"):
        print(f"  {v['status']} {v.get('check_name')}: {v['explanation'][:300]}")
