"""The gate's answer to a scheduler: one state, one line of at most 80 characters, and an exit code per style.

States rank CRITICAL > UNKNOWN > WARN > OK: a known failure says more than a gap, and a check that could
not run ("could not check") is UNKNOWN, never OK.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.exits import EXIT_FAIL, EXIT_NOT_CHECKED, EXIT_OK

OK, WARN, CRITICAL, UNKNOWN = "OK", "WARN", "CRITICAL", "UNKNOWN"
RANK = {OK: 0, WARN: 1, UNKNOWN: 2, CRITICAL: 3}
LINE_MAX = 80

# state -> exit code, per style. nagios: Nagios plugin API (0 OK, 1 WARNING, 2 CRITICAL, 3 UNKNOWN).
# npd: node-problem-detector custom plugins (0 OK, 1 NonOK, 2 Unknown): a WARN leaves the condition clear.
STYLE_CODES = {
    "rigcheck": {OK: EXIT_OK, WARN: EXIT_OK, CRITICAL: EXIT_FAIL, UNKNOWN: EXIT_NOT_CHECKED},
    "nagios": {OK: 0, WARN: 1, CRITICAL: 2, UNKNOWN: 3},
    "npd": {OK: 0, WARN: 0, CRITICAL: 1, UNKNOWN: 2},
}

# A reason a counter is Missing that means the read failed, not that the GPU lacks the counter.
_COULD_NOT = re.compile(r"could not|privilege|cannot (?:be )?reach|not readable|^not read$|fails to start")


def could_not_check(verdict: Verdict) -> bool:
    """A SKIP that is a failure to read (a reader failed, no permission), not a counter the GPU lacks."""
    why = str(verdict.numbers.get("missing") or "")
    return verdict.status == Status.SKIP and bool(_COULD_NOT.search(why))


def state_of(verdicts: Iterable[Verdict], unknown: Iterable[str] = ()) -> str:
    found = list(verdicts)
    if any(v.status in (Status.FAIL, Status.CRASH, Status.TIMEOUT) for v in found):
        return CRITICAL
    if list(unknown) or any(could_not_check(v) for v in found) or not found:
        return UNKNOWN
    if any(v.status == Status.WARN for v in found):
        return WARN
    return OK


# the few words for the health stage's own checks, which carry no "short" of their own
SHORT = {
    ("ecc", Status.FAIL): "uncorrectable ECC",
    ("ecc", Status.WARN): "ECC errors",
    ("row-remap", Status.FAIL): "row remap failed",
    ("row-remap", Status.WARN): "row remap pending",
    ("retired-pages", Status.FAIL): "page retirement failed",
    ("retired-pages", Status.WARN): "page retirement pending",
    ("persistence", Status.WARN): "persistence off",
    ("power-limit", Status.WARN): "power limit lowered",
    ("partition", Status.WARN): "partitioned",
    ("fabric", Status.FAIL): "NVSwitch fabric down",
    ("fabric", Status.WARN): "NVSwitch fabric registering",
}


def _phrase(verdict: Verdict) -> str:
    short = verdict.numbers.get("short") or SHORT.get((verdict.check, verdict.status), verdict.check)
    return str(
        short if str(short).startswith(verdict.device) or verdict.device == "node" else f"{verdict.device} {short}"
    )


def printable(text: str) -> str:
    """Text with every character a terminal would act on (escapes, newlines, other controls) shown as '?'."""
    return "".join(c if c.isprintable() else "?" for c in text)


def fit(text: str, limit: int = LINE_MAX) -> str:
    """One line of at most `limit` characters (cut with "..."), printable characters only: no escape byte read
    from a log or a file reaches a terminal, a drain reason or node-problem-detector's message."""
    line = " ".join(printable(text.replace("\n", " ")).split())
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


def summary(state: str, verdicts: list[Verdict], unknown: list[str], gpus: int) -> str:
    """The first line of output: the state and what made it, fit for a drain reason or a node condition."""
    if state == OK:  # no GPU is OK only where none was asked for (`--expect-gpus 0`)
        return fit(f"OK: {gpus} GPU(s) healthy" if gpus else "OK: no GPU, as expected (--expect-gpus 0)")
    if state == CRITICAL:
        causes = [_phrase(v) for v in verdicts if v.status in (Status.FAIL, Status.CRASH, Status.TIMEOUT)]
    elif state == UNKNOWN:
        causes = list(unknown) or [f"{v.device} {v.check} not checked" for v in verdicts if could_not_check(v)]
        causes = causes or ["no GPU health could be read"]
    else:
        causes = [_phrase(v) for v in verdicts if v.status == Status.WARN]
    causes = [fit(cause, 10 * LINE_MAX) for cause in causes]  # printable only, whatever a reader returned
    head = f"{state}: "
    body = "; ".join(causes)
    if len(head + body) <= LINE_MAX:
        return head + body
    kept: list[str] = []
    for cause in causes:
        more = f" (+{len(causes) - len(kept) - 1} more)"
        if len(head + "; ".join([*kept, cause]) + more) > LINE_MAX:
            break
        kept.append(cause)
    if not kept:
        return fit(head + causes[0] + (f" (+{len(causes) - 1} more)" if len(causes) > 1 else ""))
    rest = len(causes) - len(kept)
    return head + "; ".join(kept) + (f" (+{rest} more)" if rest else "")


def exit_code(state: str, style: str) -> int:
    return STYLE_CODES[style][state]
