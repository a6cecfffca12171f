"""Issue 40 on a GPU the table's own entries do not cover (an H100 SXM, or the H200 with RIGCHECK_LEAVE_OUT=H200):
every GPU figure of one or more `rigcheck run --json` reports against its expectation, with its basis; the WARNs
an expectation gave, the figures not judged and why, and the figures whose trust was not TRUSTED.

Usage (on the GPU machine): bash bench/arch_check.sh (runs the default run and max-find, then this), or
python3 bench/arch_check.py REPORT.json [REPORT.json ...].
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from rigcheck.engine.measure.arch_peaks import Peak, peak, props_of
from rigcheck.engine.report.html_figures import measurement_of
from rigcheck.engine.trust.expect_arch import figure_expectation
from rigcheck.engine.trust.expectations import judgeable


def report(path: Path) -> int:
    data = json.loads(path.read_text(encoding="utf-8"))
    figures = [measurement_of(row) for row in data["measurements"]]
    gpu = [m for m in figures if m.device.startswith("cuda") and judgeable(m)]
    print(f"== {path.name}: {len(gpu)} judgeable GPU figures")
    props = next((p for m in gpu if (p := props_of(m.params, m.conditions))), None)
    if props is not None:
        print(f"   device: {props}")
        for what in ("fp32", "tf32", "bf16", "fp16", "fp8", "memory"):
            found = peak(props, what)
            value = f"{found.value:,.1f}" if isinstance(found, Peak) else "none"
            print(f"   peak {what}: {value} ({found.words if isinstance(found, Peak) else found.reason})")
    kinds: Counter[str] = Counter()
    for m in gpu:
        e = figure_expectation(m)
        kind = "derived" if e.derived else "measured" if e.value is not None else "NOT JUDGED"
        kinds[kind] += 1
        expected = f"{e.value:>10,.4g}" if e.value is not None else " " * 10
        ratio = f"{e.ratio:.3f}" if e.ratio is not None else "     "
        trust = (m.conditions or {}).get("trust", "?")
        print(f"   {m.name:<32} {m.value:>10,.4g} {expected} {ratio} {trust:<9} {kind:<10} {e.basis}")
    verdicts = data["verdicts"]
    apart = [v for v in verdicts if v["check_name"].startswith(("link ", "cpu "))]  # host links and the CPU's figures
    for v in apart:
        n = v.get("numbers") or {}
        expected = f"{n['expected']:>10,.4g}" if isinstance(n.get("expected"), (int, float)) else " " * 10
        ratio = f"{n['ratio']:.3f}" if isinstance(n.get("ratio"), (int, float)) else "     "
        basis = n.get("basis") or n.get("expectation_source") or ""
        print(f"   {v['check_name']:<32} {v['status']:<10} {expected} {ratio} {str(basis)[:120]}")
    warned = [
        v
        for v in verdicts
        if v["status"] in ("WARN", "FAIL")
        and (
            v["check_name"].startswith("reference")
            or v["check_name"].startswith("roofline")
            or v["check_name"] in ("expectations", "max-find")
            or v["check_name"].startswith(("best-", "link ", "cpu "))
        )
    ]
    counts = [v for v in verdicts if v["check_name"] == "expectations"]
    print(f"   expectations: {dict(kinds)}; WARN/FAIL from an expectation: {len(warned)}")
    for v in warned + [v for v in counts if v["status"] != "PASS"]:
        print(f"   {v['status']} {v['stage']} {v['check_name']}: {v['explanation'][:300]}")
    suspect = Counter((m.conditions or {}).get("trust", "?") for m in gpu)
    print(f"   trust of the GPU figures: {dict(suspect)}")
    return len(warned)


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__)
        return 2
    return 1 if sum(report(Path(p)) for p in paths) else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
