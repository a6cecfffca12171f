"""The plain-text summary of a fleet run that rank 0's agent prints on stdout, built from the row model."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.report.fleet_view import FLEET_STAGES, LINKS_STAGE
from rigcheck.engine.report.rows import NO_TELEMETRY, meaning, number_text, report_rows, trust_of


def fleet_summary(report: dict[str, Any]) -> str:
    """Each host's state and stages, the fleet's own verdicts, and the inter-host figures."""
    fleet = report.get("fleet") or {}
    states = fleet.get("states") or {}
    lines = [
        f"fleet run {report['run']['id']}: {len(fleet.get('hosts', []))} host(s), profile {report['run']['profile']}"
    ]
    for host in fleet.get("hosts", []):
        stages = [f"{s['name']} {s['status']}" for s in report["stages"] if s["host"] == host]
        lines.append(f"  {host:<16} {states.get(host, '?'):<8} {', '.join(stages) or 'no stage reported'}")
    rows = report_rows(report)
    verdicts = [r for r in rows if r["kind"] == "verdict" and r["stage"] in FLEET_STAGES]
    checked = [v for v in verdicts if v["stage"] == LINKS_STAGE and v["status"] == "PASS" and v["host"]]
    if verdicts:
        lines.append("across the fleet:")
        if checked:
            hosts = len({v["host"] for v in checked})
            lines.append(
                f"  PASS    inter-host collectives: {len(checked)} checks on {hosts} host(s), every element right"
            )
        for v in (v for v in verdicts if v not in checked):
            where = f"{v['host']}: " if v["host"] else ""
            lines.append(f"  {v['status']:<7} {where}{meaning(v)}")
    links = [r for r in rows if r["kind"] == "measurement" and r["stage"] == LINKS_STAGE]
    if links:
        lines.append("inter-host links:")
        for m in links:
            trust = "" if trust_of(m) == NO_TELEMETRY else trust_of(m)  # a figure without telemetry says nothing
            lines.append(f"  {m['name']:<40} {number_text(m['value'], ',.1f'):>10} {m['unit'] or ''} {trust}".rstrip())
    return "\n".join(lines)
