"""Which verdicts fail a stored run, one rule for every export: each FAIL, and each WARN of a run made with --strict.

The same rule gives a run's exit code under --strict (`strict_code`): the engine applies it once, when the run
ends, for the CLI, `follow`, a detached run and a fleet agent alike; the flag is part of the run's request and is
stored with the run when it begins, so `history`, `show` and every export of that run agree with what it said.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rigcheck.engine.events import Status
from rigcheck.engine.exits import EXIT_FAIL, combine


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


def strict_code(code: int, verdicts: Iterable[Status | str], strict: bool) -> int:
    """A run's exit code with --strict applied: a WARN verdict fails the run as a FAIL does (a CRASH, an error or
    a stop still outranks it); without --strict, `code` as it is."""
    if strict and any(fails_the_run(str(getattr(v, "value", v)), True) for v in verdicts):
        return combine([code, EXIT_FAIL])
    return code


def warned(report: dict[str, Any]) -> int:
    """How many of a stored run's verdicts are WARN (what --strict counts against it)."""
    return sum(verdict["status"] == Status.WARN.value for verdict in report["verdicts"])
