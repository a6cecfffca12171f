"""Per-stage seconds, figure count, trust labels and verdicts of `rigcheck run --json` reports, side by side."""

from __future__ import annotations

import collections
import json
import sys


def load(path: str) -> dict:
    with open(path) as f:
        return json.load(f)


def row(report: dict) -> dict[str, object]:
    stages = {
        s["name"]: (s["finished"] - s["started"]) if s.get("started") and s.get("finished") else 0.0
        for s in report["stages"]
    }
    figures = report["measurements"]
    trust = collections.Counter((m.get("conditions") or {}).get("trust", "none") for m in figures)
    verdicts = collections.Counter(v["status"] for v in report["verdicts"])
    run = report["run"]
    wall = (run.get("finished") or 0) - (run.get("started") or 0)
    return {"stages": stages, "figures": len(figures), "trust": dict(trust), "verdicts": dict(verdicts), "wall": wall}


def main(paths: list[str]) -> None:
    rows = {path: row(load(path)) for path in paths}
    names = list(dict.fromkeys(n for r in rows.values() for n in r["stages"]))  # type: ignore[union-attr]
    print("report".ljust(28) + "".join(n[:9].rjust(10) for n in names) + "     wall")
    for path, r in rows.items():
        cells = "".join(f"{r['stages'].get(n, 0):10.1f}" for n in names)  # type: ignore[union-attr]
        print(path.rsplit("/", 1)[-1][:28].ljust(28) + cells + f"{r['wall']:9.1f}")
    for path, r in rows.items():
        print(f"{path.rsplit('/', 1)[-1]}: {r['figures']} figures, trust {r['trust']}, verdicts {r['verdicts']}")


if __name__ == "__main__":
    main(sys.argv[1:])
