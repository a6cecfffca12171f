"""A run's headline count, for the top of every report: its verdicts that need a look and its untrusted figures
(`1 FAIL, 2 WARN; 3 SUSPECT, 1 NOISY figures`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from rigcheck.engine.events import Trust
from rigcheck.engine.report.rows import trust_of

NEEDS_A_LOOK = ("CRASH", "TIMEOUT", "FAIL", "INCONCLUSIVE", "WARN")  # verdicts, worst first; each sets the exit code
NOT_TRUSTED = tuple(t.value for t in (Trust.BROKEN, Trust.SUSPECT, Trust.NOISY, Trust.UNJUDGED))  # a headline counts


def counts(report: dict[str, Any]) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """([(verdict status, how many)], [(trust word, how many)]), only those present, worst first."""
    verdicts = Counter(v["status"] for v in report["verdicts"])
    figures = Counter(trust_of(m) for m in report["measurements"])
    return (
        [(w, verdicts[w]) for w in NEEDS_A_LOOK if verdicts[w]],
        [(w, figures[w]) for w in NOT_TRUSTED if figures[w]],
    )


def headline(report: dict[str, Any]) -> str:
    """`2 FAIL, 1 WARN; 3 SUSPECT, 1 NOISY figures`, or `no FAIL, INCONCLUSIVE or WARN verdict; ...`."""
    verdicts, figures = counts(report)
    said = ", ".join(f"{n} {w}" for w, n in verdicts) or "no FAIL, INCONCLUSIVE or WARN verdict"
    if figures:
        plural = "s" * (sum(n for _, n in figures) != 1)
        return f"{said}; {', '.join(f'{n} {w}' for w, n in figures)} figure{plural}"
    return said + ("; no figure flagged" if report["measurements"] else "")
