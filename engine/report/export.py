"""Turns a stored run's report into JSON, CSV, Markdown, JUnit XML, Prometheus text or a baseline file, for
`export` and `--json` (and names `html`, which html_report makes from the store, since it draws the samples too)."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from rigcheck.engine.report.baseline import to_baseline
from rigcheck.engine.report.failures import failures
from rigcheck.engine.report.rows import has_hosts, report_rows, status_of

FORMATS = ("json", "csv", "md", "junit", "prom", "baseline", "html")  # html: html_report.export_html


def to_json(report: dict[str, Any]) -> str:
    """The report as stored, with `failures`: how many verdicts fail the run (each FAIL; each WARN under --strict)."""
    return json.dumps(report | {"failures": len(failures(report))}, indent=2, sort_keys=True, default=str)


def _rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The engine's rows, flattened into the columns of a table."""
    return [
        {
            "host": row.get("host") or "",
            "kind": row["kind"],
            "stage": row["stage"],
            "name": row["name"],
            "device": row["device"],
            "status": status_of(row),
            "value": row.get("value", ""),
            "unit": row.get("unit", ""),
            "spread": "" if row.get("spread") is None else row["spread"],
            "detail": row["explanation"] if row["kind"] == "verdict" else json.dumps(row["params"], sort_keys=True),
        }
        for row in report_rows(report)
    ]


def _columns(report: dict[str, Any], columns: list[str]) -> list[str]:
    """A fleet run's tables lead with the host; a single host's keep the columns they always had."""
    return ["host", *columns] if has_hosts(report) else columns


def to_csv(report: dict[str, Any]) -> str:
    out = io.StringIO()
    rows = _rows(report)
    fields = _columns(report, ["kind", "stage", "name", "device", "status", "value", "unit", "spread", "detail"])
    writer = csv.DictWriter(out, fieldnames=fields, extrasaction="ignore")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def render(report: dict[str, Any], fmt: str) -> str:
    from rigcheck.engine.report.junit import to_junit
    from rigcheck.engine.report.markdown import to_markdown  # its references' table loads only here
    from rigcheck.engine.report.prom import report_to_prom

    renderers = {
        "json": to_json,
        "csv": to_csv,
        "md": to_markdown,
        "junit": to_junit,
        "prom": report_to_prom,
        "baseline": to_baseline,
    }
    return renderers[fmt](report)
