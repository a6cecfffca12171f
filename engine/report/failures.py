"""Which verdicts fail a stored run, one rule for every export: each FAIL, and each WARN of a run made with --strict.

`rigcheck run --strict` stores the flag with the run (and the exit code it returned), so `history`, `show` and
every export of that run later agree with what the run itself said.
"""

from __future__ import annotations

from typing import Any


def is_strict(report: dict[str, Any]) -> bool:
    """Whether the run was made with --strict (a WARN fails it); False for a store from before the flag was kept."""
    return bool(report["run"].get("strict"))


def fails_the_run(status: str, strict: bool) -> bool:
    """A verdict that counts as a failure (not an error: CRASH and TIMEOUT are errors of their own)."""
    return status == "FAIL" or (strict and status == "WARN")


def failures(report: dict[str, Any], strict: bool | None = None) -> list[dict[str, Any]]:
    """The verdicts that fail the run; `strict` None: as the run was made."""
    strict = is_strict(report) if strict is None else strict
    return [verdict for verdict in report["verdicts"] if fails_the_run(verdict["status"], strict)]
