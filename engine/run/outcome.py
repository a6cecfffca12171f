"""How a run's verdicts become its exit code, and how a stage child's death is said (its signal, and what that
signal usually means)."""

from __future__ import annotations

import signal
from collections.abc import Iterable

from rigcheck.engine.events import Status
from rigcheck.engine.exits import EXIT_CRASH, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_OK

SIGNAL_HINTS = {
    "SIGKILL": " (often the kernel's out-of-memory killer)",
    "SIGSEGV": " (a segmentation fault, usually inside a GPU runtime or a native library)",
    "SIGABRT": " (a native library called abort())",
    "SIGBUS": " (a bus error: bad memory mapping)",
}


def exit_code_for(statuses: Iterable[Status]) -> int:
    """0 when all is PASS/NOT JUDGED/WARN/SKIP, 1 on any FAIL, 3 on any CRASH or TIMEOUT, else 7 on any
    INCONCLUSIVE (a figure that could not be judged is neither a PASS nor a FAIL)."""
    found = set(statuses)
    if found & {Status.CRASH, Status.TIMEOUT}:
        return EXIT_CRASH
    if Status.FAIL in found:
        return EXIT_FAIL
    if Status.INCONCLUSIVE in found:
        return EXIT_INCONCLUSIVE
    return EXIT_OK


def signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def describe_death(code: int) -> str:
    if code < 0:
        name = signal_name(code)
        return f"the stage child died of {name}{SIGNAL_HINTS.get(name, '')}"
    if code == 0:
        return "the stage child exited without reporting that it finished"
    return f"the stage child exited with code {code} before finishing"
