"""What a run's exit code means, in one line: the last line `rigcheck run` prints for any exit other than 0, and the
Markdown export's status ("exit code 7: 2 figures could not be judged", never "exit code 7; 0 verdicts fail").

Read from the stored report (its verdicts and the run's exit code), so the CLI and every export say the same.
"""

from __future__ import annotations

from typing import Any

from rigcheck.engine.exits import (
    EXIT_CRASH,
    EXIT_ERROR,
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_INTERRUPTED,
    EXIT_NO_STORE,
    EXIT_OK,
    EXIT_USAGE,
)
from rigcheck.engine.report.failures import failures

SHOWN = 2  # the verdicts named in the line; the rest are counted
CUT = 90  # characters of each verdict's reason


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'s' * (count != 1)}"


def reason_of(verdict: dict[str, Any]) -> str:
    """A verdict's reason in a few words: its cause where it has one, else its sentence after the figure."""
    numbers = verdict.get("numbers") or {}
    text = str(numbers.get("cause") or "")
    if not text:
        explanation = str(verdict.get("explanation") or "")
        for marker in ("could not be judged: ", "likely cause: "):
            if marker in explanation:
                explanation = explanation.split(marker, 1)[1]
                break
        text = explanation.split("; next: ", 1)[0]
    return text if len(text) <= CUT else text[: CUT - 3].rstrip() + "..."


def named(verdicts: list[dict[str, Any]]) -> str:
    """'check (reason); check (reason)' for the first few, and how many more."""
    said = [f"{v.get('check_name') or v.get('check') or '?'} ({reason_of(v)})" for v in verdicts[:SHOWN]]
    more = f"; and {len(verdicts) - SHOWN} more" if len(verdicts) > SHOWN else ""
    return "; ".join(said) + more


def _of(report: dict[str, Any], *statuses: str) -> list[dict[str, Any]]:
    return [v for v in report.get("verdicts") or [] if v.get("status") in statuses]


def meaning(code: int, report: dict[str, Any] | None = None) -> str:
    """What `code` means for this run, without the "exit N" prefix (see `exit_line`)."""
    report = report or {"run": {}, "verdicts": []}
    gate = ((report.get("facts") or {}).get("health") or {}).get("gate") or {}
    if code != EXIT_OK and (report.get("run") or {}).get("profile") == "passive" and gate.get("summary"):
        return f"the health check said {gate['summary']}"  # `rigcheck check` measured no figure: its state says
    if code == EXIT_OK:
        return "every verdict PASS, WARN, NOT JUDGED or SKIP"
    if code == EXIT_FAIL:
        failed = failures(report) if report.get("run") is not None else _of(report, "FAIL")
        if not failed:
            return "a verdict failed the run"
        warns = all(v.get("status") == "WARN" for v in failed)
        what = f"{plural(len(failed), 'WARN verdict')} under --strict" if warns else plural(len(failed), "verdict")
        return f"{what} failed the run: {named(failed)}"
    if code == EXIT_CRASH:
        broke = _of(report, "CRASH", "TIMEOUT")
        return f"{plural(len(broke), 'stage')} crashed or timed out" + (f": {named(broke)}" if broke else "")
    if code == EXIT_INCONCLUSIVE:
        unjudged = _of(report, "INCONCLUSIVE")
        head = f"{plural(len(unjudged), 'figure')} could not be judged" if unjudged else "a figure could not be judged"
        return head + (f": {named(unjudged)}" if unjudged else "") + "; nothing failed"
    if code == EXIT_USAGE:
        return "bad usage (said above)"
    if code == EXIT_ERROR:
        return "the store or an output file could not be written"
    if code == EXIT_NO_STORE:
        return "the fleet's store could not be reached"
    if code == EXIT_INTERRUPTED:
        return "stopped before the end"
    return "see the lines above"


def exit_line(code: int, report: dict[str, Any] | None = None) -> str | None:
    """'exit 7: 2 figures could not be judged: ...'; None for exit 0 (nothing to explain)."""
    return None if code == EXIT_OK else f"exit {code}: {meaning(code, report)}"
