"""What each mutant's run means: killed, survived (and whether judged equivalent), or invalid, where its module
no longer compiles or pytest ended before any test judged it; and the score of a module from those counts."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from mutation_harmless import HARMLESS

# pytest's exit codes past 1 (interrupted by collection errors, internal error, usage error, no tests): no
# test judged the mutant. The test command prints this mark, which cosmic-ray keeps in the run's output.
NOT_RUN_MARK = "rigcheck-mutation: pytest exit"


def results(session: Path) -> list[dict]:
    with sqlite3.connect(session) as db:
        rows = db.execute(
            "SELECT s.start_pos_row, s.operator_name, s.occurrence, r.worker_outcome, r.test_outcome, r.diff, "
            "r.output FROM mutation_specs s JOIN work_results r ON r.job_id = s.job_id ORDER BY s.start_pos_row"
        ).fetchall()
    keys = ("line", "operator", "occurrence", "worker", "test", "diff", "output")
    found = [dict(zip(keys, row, strict=True)) for row in rows]
    for row in found:  # cosmic-ray writes its outcomes upper case (KILLED, NORMAL) in some versions
        row["worker"], row["test"] = str(row["worker"]).lower(), str(row["test"]).lower()
    return found


def original_line(diff: str) -> str:
    """The first line the mutant changes, stripped; a blank line removed before it (RemoveDecorator takes the one
    above a decorator) is not it: keyed by "", it would excuse any such mutant of the module."""
    removed = (line[1:].strip() for line in diff.splitlines() if line.startswith("-") and not line.startswith("---"))
    return next(filter(None, removed), "")


def mutated_source(source: str, diff: str) -> str:
    """The module as the mutant has it: the unified diff cosmic-ray recorded, applied to the original."""
    lines = source.splitlines(keepends=True)
    out: list[str] = []
    at = 0  # next original line (0-based) not yet copied
    hunk = re.compile(r"^@@ -(\d+)(?:,\d+)? \+\d+(?:,\d+)? @@")
    body = diff.splitlines(keepends=True)
    for index, line in enumerate(body):
        start = hunk.match(line)
        if not start:
            continue
        first = int(start.group(1)) - 1
        out += lines[at:first]
        at = first
        for change in body[index + 1 :]:
            if change.startswith("@@"):
                break
            if change.startswith("+"):
                out.append(change[1:])
            elif change.startswith("-"):
                at += 1
            elif change.startswith(" ") or change in ("\n", ""):
                out.append(lines[at] if at < len(lines) else change[1:])
                at += 1
    return "".join(out + lines[at:])


def invalid_reason(source: str, module: str, row: dict) -> str | None:
    """Why no test judged this mutant: its module no longer compiles, or pytest ended before judging."""
    if row["diff"]:
        try:
            compile(mutated_source(source, row["diff"]), module, "exec")
        except SyntaxError as error:
            return f"the mutant does not compile: {error.msg}"
    mark = re.search(re.escape(NOT_RUN_MARK) + r" (\d+)", row.get("output") or "")
    if mark:
        return f"pytest exit {mark.group(1)} (collection error or no tests): no test judged it"
    return None


def harmless(module: str, survivor: dict) -> str | None:
    return HARMLESS.get((module, survivor["operator"], original_line(survivor["diff"] or "")))


def classify(module: str, source: str, found: list[dict]) -> dict[str, list[dict]]:
    """Each mutant as invalid, killed, survived or incompetent (cosmic-ray could not run it)."""
    out: dict[str, list[dict]] = {"invalid": [], "killed": [], "survived": [], "incompetent": []}
    for row in found:
        row["invalid"] = invalid_reason(source, module, row)
        if row["invalid"]:
            out["invalid"].append(row)
        elif row["test"] == "killed" or row["worker"] == "timeout":
            out["killed"].append(row)
        elif row["test"] == "survived":
            row["harmless"] = harmless(module, row)
            out["survived"].append(row)
        else:
            out["incompetent"].append(row)
    return out


def score(killed: int, survived: list[dict]) -> float | None:
    """Killed over killed and the survivors not judged equivalent."""
    real = killed + len([s for s in survived if not s["harmless"]])
    return round(killed / real, 3) if real else None
