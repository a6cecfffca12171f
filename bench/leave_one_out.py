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
from rigcheck.engine.measure.references import MODELS, REFERENCES, Reference

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


# The H200's rigcheck-measured shares beside the published figures of the same kind (issue 40's cross-check).
CROSS = (
    ("H200", "matmul bf16 4096", "H200", "best-bf16"),
    ("H200", "matmul bf16 8192", "H100 SXM", "best-bf16"),
    ("H200", "matmul fp8 8192", "H200", "best-fp8"),
    ("H200", "device copy 4 GiB", "H200", "device copy"),
    ("H200", "device copy 4 GiB", "H100 SXM", "device copy"),
    ("H200", "host to device pinned 1 GiB", "H200", "host to device pinned"),
    ("H200", "device to host pinned 1 GiB", "H200", "device to host pinned"),
)


def cross_table() -> str:
    def entry(model: str, figure: str) -> Reference:
        return next(r for r in REFERENCES if r.model == model and r.figure == figure)

    lines = [
        "| measured | share of its peak | published | share of its peak | measured / published |",
        "| --- | ---: | --- | ---: | ---: |",
    ]
    for model, figure, other, published in CROSS:
        a, b = entry(model, figure), entry(other, published)
        sa, sb = a.value / (a.peak or 1), b.value / (b.peak or 1)
        lines.append(
            f"| {model} {figure} ({a.short}) | {sa:.1%} | {other} {published} ({b.short}) | {sb:.1%} | {sa / sb:.2f} |"
        )
    return "\n".join(lines)


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
            "### The measured shares against the published ones",
            "",
            "rigcheck's H200 matmul shares agree with the published MAMF within 1-2%. Its device copy reaches 89% of",
            "the datasheet where DCGM's comments give NVIDIA's own 64-70% (H200) and 79% (H100): DCGM times another",
            "kernel, so a copy share carries first to the same figure measured the same way (the leave-one-out pairs",
            "DCGM with DCGM: 0.89 and 1.13 of the prediction, inside the 20% declared for copies). The host link",
            "matches nvbandwidth to 0.1%. Training carries to siblings only (30%; 50% below batch 4096, where the",
            "host CPU sets the pace: the H200's three runs ranged up to 22% there, under 1.1% at batch 4096-8192);",
            "across architectures it keeps its roofline (a WARN below half of it).",
            "",
            cross_table(),
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
