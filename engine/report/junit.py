"""A stored run as JUnit XML, so CI systems show each check as a test: `run --junit FILE` and `export --format junit`.

One testsuite per stage and one testcase per verdict: FAIL is a failure, CRASH and TIMEOUT are
errors, SKIP is skipped, and WARN passes with its sentence in system-out (a failure under strict).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from rigcheck.engine.report.rows import verdict_row

# XML 1.0 forbids most control characters; a crashed stage's log tail can hold them (terminal escapes).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str | None) -> str:
    return _NOT_XML.sub("?", text or "")


def _stage_seconds(report: dict[str, Any]) -> dict[str, float]:
    out = {}
    for stage in report["stages"]:
        if stage.get("started") and stage.get("finished"):
            out[stage["name"]] = max(0.0, stage["finished"] - stage["started"])
    return out


def _case(suite: ET.Element, verdict: dict[str, Any], strict: bool) -> str:
    """Adds one testcase; returns which counter it adds to ('', 'failures', 'errors' or 'skipped')."""
    row = verdict_row(verdict)
    stage, status = row["stage"], row["status"]
    name = row["name"] or "stage"
    if verdict["device"]:
        name += f" [{verdict['device']}]"
    case = ET.SubElement(suite, "testcase", classname=f"rigcheck.{stage}", name=_clean(name))
    explanation = _clean(verdict["explanation"])
    message = explanation.splitlines()[0] if explanation else status
    kind = {"FAIL": "failure", "CRASH": "error", "TIMEOUT": "error", "SKIP": "skipped"}.get(status)
    if status == "WARN" and strict:
        kind = "failure"
    if kind is not None:
        ET.SubElement(case, kind, message=f"{status}: {message}", type=status).text = explanation
    ET.SubElement(case, "system-out").text = f"{status}: {explanation}"
    return {"failure": "failures", "error": "errors", "skipped": "skipped"}.get(kind or "", "")


def to_junit(report: dict[str, Any], strict: bool = False) -> str:
    run = report["run"]
    root = ET.Element("testsuites", name=f"rigcheck run {run['id']}")
    seconds = _stage_seconds(report)
    suites: dict[str, tuple[ET.Element, dict[str, int]]] = {}
    for verdict in report["verdicts"]:
        stage = verdict["stage"]
        if stage not in suites:
            suite = ET.SubElement(root, "testsuite", name=f"rigcheck.{stage}", time=f"{seconds.get(stage, 0.0):.3f}")
            suites[stage] = (suite, {"tests": 0, "failures": 0, "errors": 0, "skipped": 0})
        suite, counts = suites[stage]
        counts["tests"] += 1
        counter = _case(suite, verdict, strict)
        if counter:
            counts[counter] += 1
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite, counts in suites.values():
        for key, value in counts.items():
            suite.set(key, str(value))
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
