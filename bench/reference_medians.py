"""Folds three quiet default runs' GPU figures (--json reports from separate device calls) into the reference
table as rigcheck-measured entries with "runs": 3: the median of the three, the three values in its note.

    python3 bench/reference_medians.py SOURCE_KEY DATE A.json B.json C.json [--write]

Only figures measured TRUSTED or NOISY in all three runs, on a GPU, and at least 20% of their datasheet peak
(launch-bound 1024 figures and pageable copies are not what the card carries) replace or join the table.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

TABLE = Path(__file__).resolve().parent.parent / "engine/measure/references.json"
KINDS = {"matmul": "matmul", "device copy": "device copy", "host to device pinned": "host link"}


def figures(path: str) -> dict[str, dict]:
    report = json.loads(Path(path).read_text())
    return {
        m["name"]: m
        for m in report["measurements"]
        if m["device"].startswith("cuda") and (m.get("conditions") or {}).get("trust") in ("TRUSTED", "NOISY")
    }


def kind_size(name: str) -> tuple[str, str, str] | None:
    words = name.split()
    if words[0] == "matmul" and len(words) == 3 and words[2] in ("4096", "8192"):
        return "matmul", words[2], words[1]
    if name == "device copy 4 GiB":
        return "device copy", "4 GiB", ""
    if name in ("host to device pinned 1 GiB", "device to host pinned 1 GiB"):
        return "host link", "1 GiB", ""
    if words[0] == "train":
        return "training", " ".join(words[1:3]), words[3]
    return None


def main(argv: list[str]) -> int:
    key, date, paths, write = argv[0], argv[1], argv[2:5], "--write" in argv
    runs = [figures(p) for p in paths]
    table = json.loads(TABLE.read_text())
    peaks = next(m for m in table["models"] if m["key"] == "H200")["peaks"]
    existing = {(r["model"], r["figure"]): r for r in table["references"]}
    changed = 0
    for name in sorted(set.intersection(*(set(r) for r in runs))):
        found = kind_size(name)
        if found is None:
            continue
        kind, size, dtype = found
        values = [r[name]["value"] for r in runs]
        middle = statistics.median(values)
        unit = runs[0][name]["unit"]
        peak_of = dtype if kind == "matmul" else {"device copy": "memory", "host link": "host_link"}.get(kind, "")
        peak = peaks.get(peak_of)
        if peak and not 0.2 <= middle / peak <= 1.0:
            continue
        entry = existing.get(("H200", name)) or {"model": "H200", "figure": name, "kind": kind, "size": size}
        if dtype:
            entry["dtype"] = dtype
        if peak:
            entry.update(peak=peak, peak_of=peak_of)
        old = entry.get("value")
        spread = (max(values) - min(values)) / middle
        entry.update(
            value=round(middle, 4 if middle < 100 else 1),
            unit=unit,
            source=key,
            note=f"median of 3 quiet default runs ({', '.join(f'{v:.4g}' for v in values)}; range {spread:.1%})",
        )
        if kind == "training":
            entry.setdefault("warn_below", 0.7)
        if ("H200", name) not in existing:
            table["references"].append(entry)
        changed += 1
        print(f"{name}: {old} -> {entry['value']} {unit} ({', '.join(f'{v:.4g}' for v in values)})")
    table["sources"][key] = {
        "kind": "rigcheck-measured",
        "short": f"rigcheck-measured, 3 runs, {date}",
        "cite": "rigcheck's quiet default run on one H200 SXM, in 3 separate device calls; median of the 3; "
        "bench/data/wave4 and bench/RESULTS.md",
        "date": date,
        "torch": "2.11.0+cu130",
        "driver": "580.159.04",
        "runs": 3,
    }
    print(f"{changed} entries from 3 runs")
    if write:
        TABLE.write_text(json.dumps(table, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
