"""What rank 0 accepts from a peer, checked before anything is stored: each event kind's fields with their
types, lengths and ranges, and every string made inert (no terminal escape or control character reaches a
terminal, an export or the app). A value that fails is Malformed: skipped and counted, never a crash.

Standard library only.
"""

from __future__ import annotations

import math
from typing import Any

from rigcheck.engine.events import Event, Status, event_from_dict
from rigcheck.engine.store.inert import inert

MAX_T = 1e11  # seconds since 1970: year 5138
MAX_INT = 2**53
MAX_DEPTH = 8
MAX_ITEMS = 20_000  # strings, numbers and keys in one event's dicts
STATUSES = {status.value for status in Status}

# field: (type, the longest text, or the numeric range, and whether None is allowed)
_S, _T, _L = 256, 4096, 65536  # a name, a path or a sentence, a log text
FIELDS: dict[str, dict[str, tuple[str, Any, bool]]] = {
    "StageStarted": {"stage": ("str", 64, False), "device": ("str", 256, False), "pid": ("int", (0, 2**31), False),
                     "python": ("str", _T, False), "t": ("t", None, False)},
    "Progress": {"stage": ("str", 64, False), "done": ("int", (0, MAX_INT), False),
                 "total": ("int", (0, MAX_INT), False), "what": ("str", _S, False), "t": ("t", None, False),
                 "device": ("str", 64, False)},
    "Measurement": {"stage": ("str", 64, False), "name": ("str", _S, False), "value": ("num", None, False),
                    "unit": ("str", 32, False), "spread": ("num", None, True), "repeats": ("int", (0, 10**9), False),
                    "device": ("str", 64, False), "params": ("dict", None, False),
                    "conditions": ("dict", None, False), "t_start": ("t", None, True), "t": ("t", None, False)},
    "Verdict": {"stage": ("str", 64, False), "check": ("str", _S, False), "status": ("status", None, False),
                "explanation": ("text", _L, False), "numbers": ("dict", None, False),
                "tolerance": ("num", None, True), "device": ("str", 64, False), "t": ("t", None, False)},
    "Facts": {"stage": ("str", 64, False), "data": ("dict", None, False), "t": ("t", None, False)},
    "Fingerprint": {"stage": ("str", 64, False), "digest": ("str", 128, False), "basis": ("dict", None, False),
                    "t": ("t", None, False)},
    "LogLine": {"stage": ("str", 64, False), "text": ("text", _L, False), "level": ("str", 16, False),
                "t": ("t", None, False)},
    "StageFinished": {"stage": ("str", 64, False), "status": ("status", None, False),
                      "exit_code": ("int", (-255, 255), True), "log_path": ("str", _T, False),
                      "t": ("t", None, False)},
    "RunStarted": {"run_id": ("int", (0, MAX_INT), False), "stages": ("list", 64, False),
                   "device": ("str", 64, False), "profile": ("str", 32, False), "t": ("t", None, False)},
    "RunFinished": {"run_id": ("int", (0, MAX_INT), False), "status": ("str", 32, False),
                    "exit_code": ("int", (-255, 255), False), "t": ("t", None, False)},
}  # fmt: skip


class Malformed(Exception):
    """A sealed value that is not what its kind must be; the message says what."""


def _text(value: Any, field: str, limit: int, lines: bool) -> str:
    if not isinstance(value, str):
        raise Malformed(f"{field} is {type(value).__name__}, not text")
    if len(value) > limit:
        raise Malformed(f"{field} is {len(value)} characters, above {limit}")
    return inert(value, lines)


def _number(value: Any, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise Malformed(f"{field} is {type(value).__name__}, not a number")
    if not math.isfinite(value) or abs(value) > 1e300:
        raise Malformed(f"{field} is not a finite number")
    return float(value) if isinstance(value, float) else value


def whole(value: Any, field: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise Malformed(f"{field} must be a whole number from {low} to {high}")
    return value


def inert_tree(value: Any, field: str, budget: list[int], depth: int = 0) -> Any:
    """A JSON value with every string (keys included) made inert, within MAX_DEPTH and MAX_ITEMS."""
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise Malformed(f"{field} is nested too deep or holds too many items")
    if isinstance(value, str):
        return inert(value, lines=True)
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return _number(value, field)
    if isinstance(value, list):
        return [inert_tree(item, field, budget, depth + 1) for item in value]
    if isinstance(value, dict):
        return {inert(str(k)): inert_tree(v, field, budget, depth + 1) for k, v in value.items()}
    raise Malformed(f"{field} holds a {type(value).__name__}")


def _field(kind: str, name: str, value: Any, spec: tuple[str, Any, bool], budget: list[int]) -> Any:
    form, bound, nullable = spec
    where = f"{kind}.{name}"
    if value is None and nullable:
        return None
    if form in ("str", "text"):
        return _text(value, where, bound, form == "text")
    if form == "int":
        return whole(value, where, *bound)
    if form == "num":
        return _number(value, where)
    if form == "t":
        t = _number(value, where)
        if not 0 <= t <= MAX_T:
            raise Malformed(f"{where} is not a time")
        return t
    if form == "status":
        if value not in STATUSES:
            raise Malformed(f"{where} {str(value)[:20]!r} is not a status")
        return value
    if form == "dict":
        if not isinstance(value, dict):
            raise Malformed(f"{where} is {type(value).__name__}, not an object")
        return inert_tree(value, where, budget)
    if form == "list":
        if not isinstance(value, list) or len(value) > bound:
            raise Malformed(f"{where} is not a list of at most {bound}")
        return [_text(item, where, 64, False) for item in value]
    raise AssertionError(form)


def event(data: Any) -> Event:
    """The event a peer sent, every field checked and every string inert (Malformed if it fails)."""
    if not isinstance(data, dict):
        raise Malformed(f"an event is an object, not {type(data).__name__}")
    kind = data.get("kind")
    fields = FIELDS.get(kind) if isinstance(kind, str) else None
    if fields is None or not isinstance(kind, str):
        raise Malformed(f"unknown event kind {inert(str(kind))[:40]!r}")
    extra = set(data) - set(fields) - {"kind"}
    if extra:
        raise Malformed(f"{kind} has fields it does not know: {', '.join(sorted(inert(k)[:20] for k in extra)[:5])}")
    budget = [MAX_ITEMS]
    checked = {name: _field(kind, name, data[name], spec, budget) for name, spec in fields.items() if name in data}
    made = event_from_dict({"kind": kind, **checked})
    if made is None:
        raise Malformed(f"{kind} lacks a field it needs")
    return made


def announcement(data: Any) -> dict[str, Any]:
    """An agent's announcement of itself (host/RANK), checked and inert."""
    if not isinstance(data, dict):
        raise Malformed("an announcement is an object")
    name = _text(data.get("name", ""), "name", 128, False).strip()
    devices = data.get("devices") or []
    stages = data.get("stages") or []
    for field, items in (("devices", devices), ("stages", stages)):
        if not isinstance(items, list) or len(items) > 256:
            raise Malformed(f"{field} is not a list of at most 256")
    timeout = data.get("collective_timeout")
    if timeout is not None and not (isinstance(timeout, (int, float)) and 0 < timeout <= 7 * 86400):
        raise Malformed("collective_timeout is not a number of seconds up to a week")
    pid = data.get("pid")
    return {
        "name": name,
        "pid": whole(pid, "pid", 0, 2**31) if pid is not None else None,
        "devices": [_text(d, "devices", 64, False) for d in devices],
        "stages": [_text(s, "stages", 64, False) for s in stages],
        "profile": _text(data.get("profile") or "", "profile", 32, False),
        "collective_timeout": None if timeout is None else float(timeout),
        "store": _text(data.get("store") or "", "store", 4096, False),
    }


def ranks(data: Any, world: int) -> list[int]:
    """Rank 0's list of the ranks in a phase: distinct ranks of this world."""
    if not isinstance(data, list) or len(data) > world or len(set(map(repr, data))) != len(data):
        raise Malformed("a phase's members are not a list of distinct ranks")
    return [whole(r, "rank", 0, world - 1) for r in data]
