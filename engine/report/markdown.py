"""One stored run as Markdown to paste into a ticket (`export --format md`): the HTML report's tables in Markdown,
with the verdicts' words, each figure's spread, trust and reasons, its conditions in words, rounded values, and
the headline counts; no raw JSON."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.exits import EXIT_OK
from rigcheck.engine.report.exit_words import meaning
from rigcheck.engine.report.failures import failures, is_strict
from rigcheck.engine.report.fleet_view import fleet_label
from rigcheck.engine.report.headline import headline
from rigcheck.engine.report.html_figures import references
from rigcheck.engine.report.rows import (
    UNSTABLE_WORTH,
    condition_phrases,
    has_hosts,
    is_unstable,
    notes_of,
    signed_spread,
    trust_of,
    trust_reasons,
    unverified,
)
from rigcheck.engine.report.run_time import started_at, took

_SPECIAL = {c: "\\" + c for c in "\\`*_[]|"} | {"&": "&amp;", "<": "&lt;", ">": "&gt;"}


def inline(value: Any) -> str:
    """Stored text as Markdown shows it, never as Markdown or HTML it makes: emphasis, links, code, table pipes and
    backslashes escaped, tags and entities written as text, on one line (a stored newline cannot start a heading)."""
    text = "" if value is None else str(value)
    text = "".join(_SPECIAL.get(ch, ch) for ch in text.replace("\r", ""))
    return " ".join(text.split("\n")).strip()


def cell(value: Any) -> str:
    """Text safe inside a Markdown table cell: as `inline`, with its lines joined by <br>."""
    text = "" if value is None else str(value).replace("\r", "").strip()
    return "<br>".join(inline(line) for line in text.split("\n"))


def code(text: str) -> str:
    """A code span that no backtick in `text` can close early (its fence is longer than any run of them)."""
    text = " ".join(text.splitlines())
    run = fence = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        fence = max(fence, run)
    ticks = "`" * (fence + 1)
    return f"{ticks} {text} {ticks}" if fence else f"`{text}`"


def rounded(value: Any) -> str:
    """`28.09`, `1,234`, `0.001235`: four significant digits, never `28.093907075294837`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "" if value is None else str(value)
    return f"{value:,.4g}"


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + " --- |" * len(headers)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def conditions_words(row: dict[str, Any]) -> str:
    return ", ".join(condition_phrases(row.get("conditions") or {}, rounded))


def _reasons(row: dict[str, Any]) -> str:
    said = trust_reasons(row)
    if is_unstable(row.get("value"), row.get("spread")):
        said.append(f"unstable: {UNSTABLE_WORTH}")
    if unverified(row):
        said.append("unverified: Verify has not passed on this device with this environment")
    said += [f"note: {note}" for note in notes_of(row)]
    return "; ".join(said)


def _failing(report: dict[str, Any]) -> str:
    found = len(failures(report))
    return f"{found} verdict{'s' * (found != 1)} {'fails' if found == 1 else 'fail'} the run"


def _status(report: dict[str, Any], strict: str) -> str:
    """'complete (exit code 0; 0 verdicts fail the run)'; for another exit, what it means (issue 43): never
    'exit code 7; 0 verdicts fail the run', which reads as a contradiction."""
    run, code = report["run"], report["run"].get("exit_code")
    if isinstance(code, int) and code != EXIT_OK:
        return f"{run['status']} (exit code {code}{strict}: {meaning(code, report)})"
    return f"{run['status']} (exit code {code}{strict}; {_failing(report)})"


def _facts(report: dict[str, Any]) -> list[str]:
    run = report["run"]
    strict = ", --strict" if is_strict(report) else ""
    fingerprint = report["fingerprint"].get("digest") or ("one per host" if report.get("fleet") else "none")
    argv = run.get("argv") or []
    facts = [
        ("status", _status(report, strict)),
        ("verdicts and figures", headline(report)),
        ("host", run.get("host")),
        ("device", fleet_label(run)),
        ("profile", run.get("profile")),
        ("stages", ", ".join(map(str, run.get("stages") or []))),
        ("started", started_at(run, utc=True)),
        ("took", took(run)),
        ("command", f"`rigcheck {' '.join(map(str, argv))}`" if argv else ""),
        ("python", run.get("python")),
        ("environment fingerprint", fingerprint),
        ("error", run.get("error")),
    ]
    return [f"- {name}: {_fact(name, value)}" for name, value in facts if value]


def _fact(name: str, value: Any) -> str:
    """A fact's value, stored text made inert as Markdown; the command as a code span nothing in it can close."""
    return code(str(value)[1:-1]) if name == "command" else inline(value)


def _verdict_cells(v: dict[str, Any], hosts: bool) -> list[str]:
    status = f"**{v['status']}**" if v["status"] != "PASS" else "PASS"  # what needs a look stands out
    where = [cell(v.get("host"))] if hosts else []
    return [*where, cell(v["stage"]), cell(v["check_name"]), cell(v.get("device")), status, cell(v.get("explanation"))]


def _figure_cells(m: dict[str, Any], hosts: bool, against: str) -> list[str]:
    where = [cell(m.get("host"))] if hosts else []
    return [
        *where,
        cell(m["stage"]),
        cell(m["name"]),
        cell(m.get("device")),
        cell(f"{rounded(m.get('value'))} {m.get('unit') or ''}".strip()),
        cell(signed_spread(m.get("value"), m.get("spread"))),
        cell(m.get("repeats")),
        cell(trust_of(m)),
        cell(_reasons(m)),
        cell(conditions_words(m)),
        cell(against),
    ]


def to_markdown(report: dict[str, Any]) -> str:
    run = report["run"]
    hosts = has_hosts(report)
    host_header = ["host"] if hosts else []
    lines = [f"# rigcheck run {run['id']} on {inline(run.get('host')) or 'unknown host'}", "", *_facts(report), ""]
    lines += ["## Verdicts", ""]
    verdicts = [_verdict_cells(v, hosts) for v in report["verdicts"]]
    headers = [*host_header, "stage", "check", "device", "status", "meaning"]
    lines += _table(headers, verdicts) if verdicts else ["None."]
    lines += ["", "## Figures", ""]
    refs = references(report)
    sources: dict[str, Any] = {}
    figures = []
    for m in report["measurements"]:
        against, said = refs.get(m.get("id")), ""
        if against is not None:
            mark = sources.setdefault(against.source, len(sources) + 1)
            said = f"{against.status} {against.share:.0%} of {against.cited} {against.unit} [{mark}]"
        figures.append(_figure_cells(m, hosts, said))
    headers = [*host_header, "stage", "figure", "device", "value", "spread", "repeats", "trust", "reasons"]
    lines += _table([*headers, "conditions", "against its reference"], figures) if figures else ["None."]
    if sources:
        lines += ["", "References:", ""] + [f"{n}. {cell(source)}" for source, n in sources.items()]
    return "\n".join(lines) + "\n"
