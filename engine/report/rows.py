"""One row model for results: a verdict or a figure, live or from the store, with its status, trust and words.

The CLI, the app and the exporters all render these rows; none reshapes the store's rows itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from rigcheck.engine.events import Measurement, Trust, Verdict
from rigcheck.engine.trust.judgement import note_words, reason_words, trust_word
from rigcheck.engine.trust.view import Conditions

Row = dict[str, Any]
NO_TELEMETRY = "no telemetry"

# What each status word means, for front ends to colour: every front end maps these classes, not the words.
STATUS_CLASS = {
    "PASS": "pass",
    "WARN": "warn",
    "INCONCLUSIVE": "inconclusive",  # could not be judged: never read as a pass, never as a fail
    "NOT JUDGED": "skip",  # measured, with nothing to judge it against
    "FAIL": "fail",
    "CRASH": "crash",
    "TIMEOUT": "crash",
    "INTERRUPTED": "crash",
    "SKIP": "skip",
    "cancelled": "skip",
    "running": "running",
} | {trust.value: trust.style for trust in Trust if trust in (Trust.TRUSTED, Trust.SUSPECT, Trust.NOISY)}
# (a BROKEN or UNJUDGED figure keeps the plain style it always had: `Trust.style` is there for a front end that
# colours them)

# The conditions shown in a figure's detail, in this order, with their words.
CONDITION_WORDS: tuple[tuple[Callable[[Conditions], float | None], str, str], ...] = (
    (lambda c: c.sm_clock_mean_mhz, "SM clock mean", "MHz"),
    (lambda c: c.sm_clock_min_mhz, "SM clock lowest", "MHz"),
    (lambda c: c.sm_clock_max_mhz, "SM clock max", "MHz"),
    (lambda c: c.temperature_max_c, "hottest", "C"),
    (lambda c: c.power_mean_w, "power mean", "W"),
    (lambda c: c.power_limit_w, "power limit", "W"),
    (lambda c: c.utilization_mean_pct, "GPU busy", "%"),
    (lambda c: c.host_others_cpus, "CPUs busy with other processes", ""),
    (lambda c: c.host_own_cpus, "CPUs busy with rigcheck", ""),
    (lambda c: c.host_cpus, "CPUs", ""),
    (lambda c: c.host_load1, "load average", ""),
)


def verdict_row(v: Verdict | Row) -> Row:
    if isinstance(v, Verdict):
        return {
            "kind": "verdict",
            "stage": v.stage,
            "name": v.check,
            "status": v.status.value,
            "explanation": v.explanation,
            "numbers": v.numbers,
            "device": v.device,
            "host": "",
        }
    return {
        "kind": "verdict",
        "stage": v["stage"],
        "name": v["check_name"],
        "status": v["status"],
        "explanation": v.get("explanation") or "",
        "numbers": v.get("numbers") or {},
        "device": v.get("device") or "",
        "host": v.get("host") or "",
    }


def measurement_row(m: Measurement | Row) -> Row:
    keys = ("stage", "name", "value", "unit", "device", "conditions", "spread", "repeats", "params")
    if isinstance(m, Measurement):
        return {"kind": "measurement", "host": ""} | {k: getattr(m, k) for k in keys}
    return {"kind": "measurement", "host": m.get("host") or ""} | {k: m.get(k) for k in keys}


def trust_of(row: Row) -> str:
    """A figure's trust word as the engine wrote it (TRUSTED, SUSPECT, NOISY, or one added later)."""
    return trust_word(row.get("conditions")) or NO_TELEMETRY


def unverified(row: Row) -> bool:
    """Verify has not vouched for this figure's device (with this environment)."""
    return (row.get("conditions") or {}).get("verified") is False


def trust_reasons(row: Row) -> list[str]:
    return reason_words(row.get("conditions"))


def notes_of(row: Row) -> list[str]:
    return note_words(row.get("conditions"))


def status_of(row: Row) -> str:
    return row["status"] if row["kind"] == "verdict" else trust_of(row)


INF = float("inf")


def number_text(value: Any, spec: str = ",.4g") -> str:
    """A stored figure's value as text; `unknown` where the store holds no finite number (NULL, text: tampered)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value in (INF, -INF):
        return "unknown"
    return format(value, spec)


def value_text(row: Row) -> str:
    if row["kind"] != "measurement":
        return ""
    return f"{number_text(row['value'])} {row['unit']}".strip()


def meaning(row: Row) -> str:
    """One line: a verdict's sentence, or why a figure is not trusted (its reasons, or that it is unverified)."""
    if row["kind"] == "verdict":
        lines = (row.get("explanation") or "").splitlines()
        return lines[0] if lines else ""
    said = trust_reasons(row)
    if is_unstable(row.get("value"), row.get("spread")):
        said.append(UNSTABLE_SHORT)
    if unverified(row):
        said.append("unverified")
    return "; ".join(said)


UNSTABLE_SHARE = 0.5  # a spread this large a share of the figure reads as a bug with a "±" (and as negative rates)
UNSTABLE_WORTH = "its repeats disagree too much for the figure to be more than a rough indication: measure it again"
UNSTABLE_SHORT = "unstable: a rough indication only"


def spread_share(value: float | None, spread: float | None) -> float | None:
    """A figure's spread (the interquartile range of its rates) over the figure; None where there is none."""
    if spread is None or value is None or not value:
        return None
    return abs(spread / value)


def spread_text(value: float | None, spread: float | None) -> str:
    """A figure's spread as a share of the figure: `5.1%`; from UNSTABLE_SHARE on, `unstable (spread 72x the
    figure)`, since a "±7,148%" reads as a bug; empty where there is none or the figure is zero. An absolute
    spread hid that it was often larger than the figure."""
    share = spread_share(value, spread)
    if share is None:
        return ""
    if share >= UNSTABLE_SHARE:
        size = f"{share:.0%} of" if share < 1.5 else f"{share:,.0f}x"
        return f"unstable (spread {size} the figure)"
    return f"{share * 100:.1f}%" if share < 0.1 else f"{share * 100:,.0f}%"


def signed_spread(value: float | None, spread: float | None) -> str:
    """The spread as a table cell shows it: `±5.1%`, `unstable (...)`, or empty."""
    text = spread_text(value, spread)
    return f"±{text}" if text and not text.startswith("unstable") else text


def is_unstable(value: float | None, spread: float | None) -> bool:
    share = spread_share(value, spread)
    return share is not None and share >= UNSTABLE_SHARE


def _number(value: Any) -> str:
    return f"{value:,.4g}" if isinstance(value, int | float) and not isinstance(value, bool) else str(value)


def condition_phrases(conditions: Mapping[str, Any], number: Callable[[Any], str]) -> list[str]:
    """A figure's conditions as short phrases ("SM clock 1,980 MHz", "throttle: power cap"), each number written
    by `number`: the one wording the CLI's detail, the Markdown export and the app's detail pane share."""
    view = Conditions.from_dict(conditions)
    shown = [
        f"{words} {number(value)}{(' ' + unit) if unit else ''}"
        for read, words, unit in CONDITION_WORDS
        if (value := read(view)) is not None
    ]
    if view.throttle:
        shown.append(f"throttle: {', '.join(view.throttle)}")
    if view.other_gpu_pids:
        shown.append(f"other processes on the GPU: {', '.join(map(str, view.other_gpu_pids))}")
    return shown


def detail_text(row: Row) -> str:
    """Everything known about one row, in words, for the detail pane and the detail screen."""
    if row["kind"] == "verdict":
        where = f" on {row['device']}" if row.get("device") else ""
        text = f"{row['status']} {row['stage']}/{row['name']}{where}: {row['explanation']}"
        return text + (f"\nnumbers: {json.dumps(row['numbers'], default=str)}" if row.get("numbers") else "")
    conditions = row.get("conditions") or {}
    spread = spread_text(row.get("value"), row.get("spread"))
    if is_unstable(row.get("value"), row.get("spread")):
        spread = f" ({spread}: {UNSTABLE_WORTH})"
    else:
        spread = f" (spread of the rate ±{spread} of the median)" if spread else ""
    repeats = f" over {row['repeats']} repeats" if row.get("repeats") and row["repeats"] > 1 else ""
    lines = [f"{row['name']}: {value_text(row)}{spread}{repeats} on {row['device'] or 'the host'}"]
    reasons = reason_words(conditions)
    lines.append(f"trust: {trust_of(row)}" + (f": {'; '.join(reasons)}" if reasons else ""))
    lines.extend(f"note: {note}" for note in note_words(conditions))
    verified = conditions.get("verified")
    verified_words: dict[object, str] = {
        True: "yes",
        False: "no: Verify has not passed on this device with this environment",
    }
    lines.append(f"verified: {verified_words.get(verified, 'unknown')}")
    lines.append(f"conditions: {', '.join(condition_phrases(conditions, _number)) or 'none recorded'}")
    if row.get("params"):
        lines.append(f"parameters: {json.dumps(row['params'], default=str)}")
    return "\n".join(lines)


def has_hosts(report: dict[str, Any]) -> bool:
    """A fleet run's rows name their hosts; a single host's never do (and print as they always have)."""
    return any(row.get("host") for row in report["verdicts"] + report["measurements"])


def report_rows(report: dict[str, Any], by_time: bool = False) -> list[Row]:
    """Every verdict and figure of a stored report as rows: verdicts first, or all in the order they arrived."""
    rows = [verdict_row(v) | {"t": v.get("t")} for v in report["verdicts"]]
    rows += [measurement_row(m) | {"t": m.get("t")} for m in report["measurements"]]
    return sorted(rows, key=lambda row: row["t"] or 0.0) if by_time else rows
