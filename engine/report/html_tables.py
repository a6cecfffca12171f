"""The HTML report's tables: verdicts, every figure with its trust, reasons and reference, and the health grid.

Every text from the store (names, reasons, host names, a fleet peer's words) goes through `esc`.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Sequence
from typing import Any

from rigcheck.engine.report.html_figures import Against
from rigcheck.engine.report.rows import (
    STATUS_CLASS,
    UNSTABLE_WORTH,
    has_hosts,
    is_unstable,
    notes_of,
    signed_spread,
    trust_of,
    trust_reasons,
    unverified,
)


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def words(value: Any) -> str:
    """Escaped text whose `backticked` spans (commands, options) become <code>, as Markdown would show them."""
    return re.sub(r"`([^`\n]+)`", r"<code>\1</code>", esc(value))


def number(value: Any) -> str:
    return f"{value:,.4g}" if isinstance(value, int | float) and not isinstance(value, bool) else esc(value)


def status(word: str, title: str = "") -> str:
    """A status word in its colour (the same classes every front end maps)."""
    tip = f' title="{esc(title)}"' if title else ""
    return f'<span class="st st-{STATUS_CLASS.get(word, "other")}"{tip}>{esc(word)}</span>'


def table(headers: Sequence[str], rows: Iterable[Sequence[str]], css: str = "") -> str:
    """A table of cells already made HTML (escaped by whoever made them)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    klass = f' class="{css}"' if css else ""
    return f"<table{klass}>\n<thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody>\n</table>"


def _host(report: dict[str, Any], row: dict[str, Any]) -> list[str]:
    return [esc(row.get("host") or "")] if has_hosts(report) else []


def _host_header(report: dict[str, Any]) -> list[str]:
    return ["host"] if has_hosts(report) else []


def verdicts_table(report: dict[str, Any]) -> str:
    """Every verdict but Health's (those have their own grid), in the order the run gave them."""
    rows = [
        [
            *_host(report, v),
            esc(v["stage"]),
            esc(v["check_name"]),
            esc(v.get("device")),
            status(v["status"]),
            f'<span class="pre">{words(v.get("explanation"))}</span>',
        ]
        for v in report["verdicts"]
        if v["stage"] != "health"
    ]
    if not rows:
        return "<p>No verdicts were stored for this run.</p>"
    return table([*_host_header(report), "stage", "check", "device", "status", "meaning"], rows)


def _spread(row: dict[str, Any]) -> str:
    spread, value = row.get("spread"), row.get("value")
    if not isinstance(spread, int | float) or not isinstance(value, int | float) or not value:
        return ""
    return esc(signed_spread(value, spread))


def _reasons(row: dict[str, Any]) -> str:
    said = [words(r) for r in trust_reasons(row)]
    if is_unstable(row.get("value"), row.get("spread")):
        said.append(f"unstable: {esc(UNSTABLE_WORTH)}")
    if unverified(row):
        said.append("unverified: Verify has not passed on this device with this environment")
    said += [f'<span class="note">note: {words(n)}</span>' for n in notes_of(row)]
    return "<br>".join(said)


def _against(against: Against | None, sources: dict[str, int]) -> str:
    if against is None:
        return ""
    mark = sources.setdefault(against.source, len(sources) + 1)
    return (
        f"{status(against.status)} {against.share:.0%} of {esc(against.cited)} {esc(against.unit)} "
        f'<a href="#ref-{mark}">[{mark}]</a>'
    )


def figures_table(report: dict[str, Any], refs: dict[int, Against]) -> str:
    """Every figure: its value, spread, trust and the reasons for it, and its reference where one exists; the
    references' sources listed once beneath."""
    if not report["measurements"]:
        return "<p>No figures were stored for this run.</p>"
    sources: dict[str, int] = {}
    rows = []
    for m in report["measurements"]:
        rows.append(
            [
                *_host(report, m),
                esc(m["stage"]),
                esc(m["name"]),
                esc(m.get("device")),
                f'<span class="num">{number(m.get("value"))}</span> {esc(m.get("unit"))}',
                _spread(m),
                esc(m.get("repeats")),
                status(trust_of(m)),
                _reasons(m),
                _against(refs.get(m["id"]), sources),
            ]
        )
    headers = [*_host_header(report), "stage", "figure", "device", "value", "spread", "repeats", "trust", "reasons"]
    out = table([*headers, "against its reference"], rows, "figures")
    if not refs:
        out += '\n<p class="small">No figure here has a reference: references are kept for known GPU models.</p>'
    if sources:
        cited = "".join(f'<li id="ref-{n}">{esc(source)}</li>' for source, n in sources.items())
        out += f'\n<p class="small">References:</p>\n<ol class="small">{cited}</ol>'
    return out


def health_table(report: dict[str, Any]) -> str:
    """Health's verdicts as a grid, a device a row and a check a column, then each one that is not a PASS
    in full (the grid's cells carry the words only as a tooltip, which a printed page loses)."""
    checks = [v for v in report["verdicts"] if v["stage"] == "health"]
    if not checks:
        return "<p>The health stage did not run in this run.</p>"
    columns = list(dict.fromkeys(str(v["check_name"]) for v in checks))
    grid: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for v in checks:
        grid.setdefault((v.get("host") or "", v.get("device") or ""), {})[str(v["check_name"])] = v
    hosts = has_hosts(report)
    rows = []
    for (host, device), cells in grid.items():
        row = [esc(host)] if hosts else []
        row.append(esc(device))
        for column in columns:
            v = cells.get(column)
            row.append(status(v["status"], v.get("explanation") or "") if v else "")
        rows.append(row)
    out = table([*(["host"] if hosts else []), "device", *columns], rows, "health")
    notable = [v for v in checks if v["status"] != "PASS"]
    if notable:
        items = "".join(f"<li>{status(v['status'])} {words(v.get('explanation'))}</li>" for v in notable)
        out += f'\n<ul class="small">{items}</ul>'
    return out
