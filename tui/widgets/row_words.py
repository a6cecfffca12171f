"""A result row in sentences and fields, never JSON: the Running tab's why line, Results' detail, the detail screen.

The engine says why a figure is not trusted as reasons of the form `cause; next: what to do`; here each
becomes two sentences. A verdict's numbers and a figure's parameters become `name: value` fields.
"""

from __future__ import annotations

from typing import Any

from rigcheck.engine.events import Trust
from rigcheck.engine.report.rows import (
    NO_TELEMETRY,
    Row,
    condition_phrases,
    notes_of,
    spread_text,
    trust_of,
    trust_reasons,
    unverified,
    value_text,
)

NEXT = "; next: "
WHAT_TRUST_MEANS = {
    Trust.TRUSTED: "measured on a quiet device: it can be compared with other runs.",
    Trust.SUSPECT: "something disturbed it while it was measured, so it says more about that than about the machine.",
    Trust.NOISY: "its repeats disagree too much for it to be compared.",
    Trust.BROKEN: "it cannot be right (above what the hardware can do): a timer or the work was wrong.",
    Trust.UNJUDGED: "it could not be judged.",
}


def sentence(text: str) -> str:
    """`other processes used ...` -> `Other processes used ....`: a capital and a full stop."""
    text = text.strip()
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text[-1] in ".!?" else text + "."


def reason_sentences(reason: str) -> str:
    """One engine reason as sentences: the cause, then `Next: ...` where it names a next step."""
    cause, _, next_step = reason.partition(NEXT)
    return sentence(cause) + (f" Next: {next_step.strip().rstrip('.')}." if next_step else "")


def why_text(row: Row) -> str:
    """Why a figure has its trust word (or what a verdict says), in full sentences, for a detail line."""
    if row["kind"] == "verdict":
        where = f" on {row['device']}" if row.get("device") else ""
        return f"{row['status']} {row['stage']}/{row['name']}{where}: {sentence(row.get('explanation') or '')}"
    trust = trust_of(row)
    where = f"{row['name']} on {row.get('device') or 'the host'}"
    head = f"{where} is {trust}"
    reasons = trust_reasons(row)
    if reasons:
        said = [f"{head} because:" if len(reasons) > 1 else f"{head}:"]
        said += [reason_sentences(r) for r in reasons]
    elif trust in WHAT_TRUST_MEANS:
        said = [f"{head}: {WHAT_TRUST_MEANS[trust]}"]
    elif trust == NO_TELEMETRY:
        said = [f"{where}: no telemetry was recorded beside it, so nothing says whether it was disturbed."]
    else:
        said = [f"{head}."]
    spread = spread_text(row.get("value"), row.get("spread"))
    if spread.startswith("unstable"):  # the table's cell says only "unstable": how much, and what it is worth
        said.append(f"Its repeats are {spread}: take it as a rough size only, and measure it again.")
    if unverified(row):
        said.append("Verify has not passed on this device with this environment, so it is unverified.")
    return " ".join(said)


def field_name(key: str) -> str:
    """`flops_per_call` -> `flops per call`."""
    return str(key).replace("_", " ")


def field_value(value: Any) -> str:
    """A number to four significant figures, a list joined, a mapping as `key value` pairs, never JSON."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        return f"{value:,.4g}"
    if isinstance(value, list | tuple):
        return ", ".join(field_value(v) for v in value) or "none"
    if isinstance(value, dict):
        return ", ".join(f"{field_name(k)} {field_value(v)}" for k, v in value.items()) or "none"
    return "none" if value is None else str(value)


def fields(mapping: dict[str, Any]) -> str:
    """`name: value` fields on one line, `; ` between them."""
    return "; ".join(f"{field_name(k)}: {field_value(v)}" for k, v in mapping.items())


def conditions_text(conditions: dict[str, Any]) -> str:
    return ", ".join(condition_phrases(conditions, field_value)) or "none recorded"


def detail_words(row: Row) -> str:
    """Everything known about one row: why it has its status first, in sentences, then fields, one subject a
    line (a pane too small for all of it shows the why)."""
    if row["kind"] == "verdict":
        lines = [why_text(row)]
        lines.extend(sentence(line) for line in (row.get("explanation") or "").splitlines()[1:] if line.strip())
        if row.get("numbers"):
            lines.append(f"Numbers: {fields(row['numbers'])}")
        return "\n".join(lines)
    conditions = row.get("conditions") or {}
    spread = spread_text(row.get("value"), row.get("spread"))
    repeats = f" over {row['repeats']} repeats" if row.get("repeats") and row["repeats"] > 1 else ""
    spread_words = f", its rate spread ±{spread} of the median" if spread else ""
    if spread.startswith("unstable"):  # "unstable (spread 2x the figure)" is no share to put a ± before
        spread_words = f", its rate {spread}"
    lines = [why_text(row), f"Value: {value_text(row)}{repeats}{spread_words}."]
    verified = {True: "yes", False: "no, Verify has not passed on this device with this environment"}
    lines.append(f"Verified: {verified.get(conditions.get('verified'), 'unknown')}.")
    lines.extend(f"Note: {sentence(note)}" for note in notes_of(row))
    lines.append(f"Conditions: {conditions_text(conditions)}.")
    if row.get("params"):
        lines.append(f"Parameters: {fields(row['params'])}.")
    return "\n".join(lines)
