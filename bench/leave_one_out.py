"""Issue 40: the reference table's leave-one-out and its peak check, written into bench/RESULTS.md.

Each model's own entries predicted with its own entries removed (engine/measure/leave_one_out.py), and every
datasheet peak the table (or a specimen) holds against its derivation from SMs/CUs, clocks and bus width
(engine/measure/arch_peaks.py). Usage: python3 bench/leave_one_out.py [--print]. No GPU needed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from rigcheck.engine.measure.arch_peaks import check_peaks
from rigcheck.engine.measure.leave_one_out import predictions, table
from rigcheck.engine.measure.references import MODELS

RESULTS = Path(__file__).with_name("RESULTS.md")
BEGIN, END = "<!-- issue 40: leave-one-out (bench/leave_one_out.py) -->", "<!-- end of issue 40 -->"


def peak_table() -> str:
    rows = check_peaks({m.key: m.peaks for m in MODELS if m.vendor != "cpu"})
    lines = ["| model | peak | datasheet | derived | error | how |", "| --- | --- | ---: | ---: | ---: | --- |"]
    for r in rows:
        derived = "" if r.derived is None else f"{r.derived:,.1f}"
        error = "" if r.error is None else f"{r.error:+.1%}"
        lines.append(f"| {r.model} | {r.what} | {r.datasheet:,.1f} | {derived} | {error} | {r.words} |")
    agree = sum(r.agrees for r in rows)
    checked = sum(r.derived is not None for r in rows)
    return (
        f"{agree} of {checked} derived peaks within 3% of their datasheet ({len(rows)} datasheet peaks).\n\n"
        + "\n".join(lines)
    )


def section() -> str:
    rows = predictions()
    made = [p for p in rows if p.predicted is not None]
    misses = [p for p in made if p.miss]
    worst = max(made, key=lambda p: abs((p.ratio or 1.0) - 1.0))
    return "\n".join(
        [
            BEGIN,
            "## Expectations from the architecture: leave-one-out and derived peaks (issue 40)",
            "",
            "Written by `python3 bench/leave_one_out.py` (no GPU: the table itself). Each model's own entries are",
            "predicted with its own entries removed, from its architecture's siblings (their share of their peak,",
            "carried to its peak), or coarsely from another architecture of its class; `entry / predicted` is how the",
            "rule would grade a figure at exactly the entry's value. A miss (outside the declared spread either way)",
            "fails `tests/unit/test_leave_one_out.py`.",
            "",
            f"**{len(made)} of {len(rows)} entries predicted, {len(misses)} outside their spread.** Largest error: "
            f"{worst.model} {worst.figure}, {worst.ratio:.3f} of the prediction (spread {worst.spread:.0%}). The",
            "H200's rigcheck-measured figures (matmul by size, training) have no measured sibling yet: the H200 is",
            "the one Hopper rigcheck has measured, so they are carried to an H100 or GH200 but cannot be predicted",
            "themselves; the T4, P40 and Radeon 8060S belong to classes no share is carried to or from.",
            "",
            table(rows),
            "",
            "### Derived peaks against every datasheet peak",
            "",
            peak_table(),
            END,
        ]
    )


def main() -> int:
    text = section()
    if "--print" in sys.argv:
        print(text)
        return 0
    old = RESULTS.read_text(encoding="utf-8")
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        new = head + text + rest.split(END, 1)[1]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    RESULTS.write_text(new, encoding="utf-8")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
