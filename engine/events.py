"""Everything a stage or the runner reports, as small frozen dataclasses that pickle across processes.

This module is imported by stage children that may run under another interpreter, so it uses
the standard library only.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from enum import Enum
from typing import Any, TypeVar

T = TypeVar("T")


class Status(str, Enum):
    """A verdict's outcome, ordered by `severity`; SKIP ranks lowest so a stage that passed its
    checks and skipped one is still PASS, while a stage that only skipped is SKIP.

    "Could not judge" is never PASS and never FAIL. NOT JUDGED: measured, but there is nothing to judge the
    figure against (no reference for this model): it says so, and does not fail the run. INCONCLUSIVE: there
    was something to judge against, but the figure could not be judged (disturbed by someone else's load, a
    setting that changes it, too noisy): it has its own exit code. FAIL is for a figure measured clean."""

    PASS = "PASS"
    SKIP = "SKIP"
    NOT_JUDGED = "NOT JUDGED"
    WARN = "WARN"
    INCONCLUSIVE = "INCONCLUSIVE"
    FAIL = "FAIL"
    TIMEOUT = "TIMEOUT"
    CRASH = "CRASH"

    @property
    def severity(self) -> int:
        return _SEVERITY[self]


_SEVERITY = {
    Status.SKIP: 0,
    Status.PASS: 1,
    Status.NOT_JUDGED: 2,
    Status.WARN: 3,
    Status.INCONCLUSIVE: 4,
    Status.FAIL: 5,
    Status.TIMEOUT: 6,
    Status.CRASH: 7,
}


class Trust(str, Enum):
    """How far a figure can be trusted, from the conditions it was measured under (engine/trust/judge.py decides
    it); each word carries what the reports restate: whether the figure is a result, its Prometheus code and its
    style class (the same classes as a status's, engine/report/rows.py)."""

    TRUSTED = "TRUSTED"  # measured on a quiet device: comparable with other runs
    NOISY = "NOISY"  # nothing interfered, but its repeats spread more than the policy allows
    UNJUDGED = "UNJUDGED"  # too few telemetry samples cover it to say
    SUSPECT = "SUSPECT"  # something outside the measurement interfered: the reasons say what
    BROKEN = "BROKEN"  # impossible, or its two clocks disagree: never a result

    def __str__(self) -> str:  # the word, wherever it is written (an f-string, a join, a report)
        return self.value

    def __format__(self, spec: str) -> str:  # f"{Trust.BROKEN}" is BROKEN, as str() is
        return format(self.value, spec)

    @property
    def is_result(self) -> bool:
        """Whether the figure is a result at all (a BROKEN one is left out of best-of, baselines and peers)."""
        return self is not Trust.BROKEN

    @property
    def sound(self) -> bool:
        """Whether the figure may stand for the machine elsewhere (a baseline, a history, a comparison)."""
        return self is Trust.TRUSTED

    @property
    def code(self) -> int:
        """rigcheck_figure_trust's value, worse the higher (3 is a figure with no telemetry: no trust word)."""
        return _TRUST_CODE[self]

    @property
    def style(self) -> str:
        """The style class front ends colour it by."""
        return _TRUST_STYLE[self]

    @staticmethod
    def of(word: object) -> Trust | None:
        """The trust a stored word names; None for none, or for a word this version does not know."""
        try:
            return Trust(word) if word else None
        except ValueError:
            return None


NO_TELEMETRY_CODE = 3  # rigcheck_figure_trust for a figure no telemetry covered
_TRUST_CODE = {Trust.TRUSTED: 0, Trust.NOISY: 1, Trust.UNJUDGED: 2, Trust.SUSPECT: 4, Trust.BROKEN: 5}
_TRUST_STYLE = {Trust.TRUSTED: "pass", Trust.NOISY: "warn", Trust.UNJUDGED: "skip", Trust.SUSPECT: "warn"}
_TRUST_STYLE[Trust.BROKEN] = "fail"


def worst_by(items: Iterable[T], status_of: Callable[[T], Status | str]) -> T | None:
    """The item whose status is the most severe (the first of equals), passing over status words this
    version does not know; None when none is left. Every "worst status" in rigcheck is this one."""
    found: T | None = None
    highest = -1
    for item in items:
        try:
            severity = Status(status_of(item)).severity
        except ValueError:  # a status this version does not know is not one to rank
            continue
        if severity > highest:
            found, highest = item, severity
    return found


def worst(statuses: Iterable[Status | str]) -> Status | None:
    """The most severe status, or None when there is none to rank."""
    found = worst_by(statuses, lambda status: status)
    return None if found is None else Status(found)


def _now() -> float:
    return time.time()


@dataclass(frozen=True)
class StageStarted:
    stage: str
    device: str
    pid: int
    python: str
    t: float = field(default_factory=_now)


@dataclass(frozen=True)
class Progress:
    stage: str
    done: int
    total: int
    what: str = ""
    t: float = field(default_factory=_now)
    device: str = ""  # set by the runner when several children of one stage run at once


@dataclass(frozen=True)
class Measurement:
    """One figure with its spread; conditions are filled by the parent from telemetry, never invented."""

    stage: str
    name: str
    value: float
    unit: str
    spread: float | None = None
    repeats: int = 1
    device: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    conditions: dict[str, Any] = field(default_factory=dict)
    t_start: float | None = None
    t: float = field(default_factory=_now)


@dataclass(frozen=True)
class Verdict:
    """The answer to one check: status, one sentence of meaning, and the numbers behind it."""

    stage: str
    check: str
    status: Status
    explanation: str
    numbers: dict[str, Any] = field(default_factory=dict)
    tolerance: float | None = None
    device: str = ""
    t: float = field(default_factory=_now)


@dataclass(frozen=True)
class Facts:
    """Structured facts a stage found (Probe's inventory), kept whole in the store."""

    stage: str
    data: dict[str, Any]
    t: float = field(default_factory=_now)


@dataclass(frozen=True)
class Fingerprint:
    """A short digest of the environment that every later result of the run carries."""

    stage: str
    digest: str
    basis: dict[str, Any]
    t: float = field(default_factory=_now)


@dataclass(frozen=True)
class LogLine:
    stage: str
    text: str
    level: str = "info"
    t: float = field(default_factory=_now)


@dataclass(frozen=True)
class StageFinished:
    """Sent by the child when its stage returns, or made up by the runner when the child died."""

    stage: str
    status: Status
    exit_code: int | None = None
    log_path: str = ""
    t: float = field(default_factory=_now)


@dataclass(frozen=True)
class RunStarted:
    run_id: int
    stages: tuple[str, ...]
    device: str
    profile: str
    t: float = field(default_factory=_now)


@dataclass(frozen=True)
class RunFinished:
    run_id: int
    status: str  # complete | cancelled | interrupted
    exit_code: int
    t: float = field(default_factory=_now)


Event = (
    StageStarted
    | Progress
    | Measurement
    | Verdict
    | Facts
    | Fingerprint
    | LogLine
    | StageFinished
    | RunStarted
    | RunFinished
)


def event_kind(event: Event) -> str:
    return type(event).__name__


def event_to_dict(event: Event) -> dict[str, Any]:
    """The event's fields by name, its Status as text, and its kind: what JSON writes. Shallow: the nested
    dicts are the event's own (dataclasses.asdict deep-copied them, two thirds of a fleet row's cost)."""
    kind: type = type(event)
    data = {name: getattr(event, name) for name in _field_names(kind)}
    for key, value in data.items():
        if isinstance(value, Status):
            data[key] = value.value
    data["kind"] = event_kind(event)
    return data


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls))


_KINDS: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        StageStarted,
        Progress,
        Measurement,
        Verdict,
        Facts,
        Fingerprint,
        LogLine,
        StageFinished,
        RunStarted,
        RunFinished,
    )
}


def event_from_dict(data: dict[str, Any]) -> Event | None:
    """The event `event_to_dict` wrote, as followers read it back from the store; None for a kind this
    version does not know."""
    cls = _KINDS.get(str(data.get("kind")))
    if cls is None:
        return None
    fields = {key: value for key, value in data.items() if key != "kind"}
    if "status" in fields and cls in (Verdict, StageFinished):
        fields["status"] = Status(fields["status"])
    if cls is RunStarted:
        fields["stages"] = tuple(fields["stages"])
    try:
        return cls(**fields)  # type: ignore[no-any-return]
    except TypeError:  # written by a version with other fields
        return None
