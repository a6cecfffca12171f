"""A stored run as JUnit XML, so CI systems show each check as a test: `run --junit FILE` and `export --format junit`.

One testsuite per stage (per host and stage in a fleet run) and one testcase per verdict: FAIL is a failure,
CRASH and TIMEOUT are errors, SKIP is skipped, and WARN passes with its sentence in system-out (a failure in a
run made with --strict). The file validates against pytest's junit-10.xsd (tests/data/junit-10.xsd), which
allows `skipped` on a testsuite but not on the testsuites around them. In a fleet run every testcase names its
host, so two hosts' verdicts on one check are two tests.
"""

from __future__ import annotations

import datetime as dt
import re
import xml.etree.ElementTree as ET
from typing import Any

from rigcheck.engine.report.failures import fails_the_run, is_strict
from rigcheck.engine.report.rows import verdict_row

# XML 1.0 forbids most control characters; a crashed stage's log tail can hold them (terminal escapes).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
COUNTERS = ("tests", "failures", "errors", "skipped")
WHOLE_FLEET = "all hosts"  # a fleet run's verdicts about no one host (the fleet-wide comparisons)


def _clean(text: str | None) -> str:
    return _NOT_XML.sub("?", text or "")


def _stage_times(report: dict[str, Any]) -> dict[tuple[str, str], tuple[float, float]]:
    """(host, stage) -> (started, seconds) of each stage that ran to its end."""
    out = {}
    for stage in report["stages"]:
        if stage.get("started") and stage.get("finished"):
            out[(stage.get("host") or "", stage["name"])] = (
                stage["started"],
                max(0.0, stage["finished"] - stage["started"]),
            )
    return out


def _case(suite: ET.Element, verdict: dict[str, Any], strict: bool, host: str | None) -> str:
    """Adds one testcase; returns which counter it adds to ('', 'failures', 'errors' or 'skipped'). `host`: the
    host a fleet run's verdict is about (None in a run of one host)."""
    row = verdict_row(verdict)
    stage, status = row["stage"], row["status"]
    where = [part for part in (host, verdict["device"]) if part]
    name = (row["name"] or "stage") + (f" [{' '.join(where)}]" if where else "")
    case = ET.SubElement(suite, "testcase", classname=f"rigcheck.{stage}", name=_clean(name))
    explanation = _clean(verdict["explanation"])
    message = explanation.splitlines()[0] if explanation else status
    # INCONCLUSIVE could not be judged: an error of measurement, never a pass and never the hardware's failure
    kind = {"CRASH": "error", "TIMEOUT": "error", "INCONCLUSIVE": "error", "SKIP": "skipped"}.get(status)
    if fails_the_run(status, strict):
        kind = "failure"
    if kind is not None:
        ET.SubElement(case, kind, message=_clean(f"{status}: {message}"), type=status).text = explanation
    ET.SubElement(case, "system-out").text = f"{status}: {explanation}"
    return {"failure": "failures", "error": "errors", "skipped": "skipped"}.get(kind or "", "")


def _suite(
    root: ET.Element,
    key: tuple[str, str],
    times: dict[tuple[str, str], tuple[float, float]],
    fleet: bool,
    run_host: str,
) -> ET.Element:
    """A stage's testsuite; in a fleet run, one host's (`run_host` is then '')."""
    host, stage = key
    started, seconds = times.get(key, (None, 0.0))
    name = f"rigcheck.{stage}" + (f" on {host or WHOLE_FLEET}" if fleet else "")
    attributes = {"name": name, "time": f"{seconds:.3f}"}
    hostname = host or run_host
    if hostname:
        attributes["hostname"] = _clean(hostname)
    if started:
        attributes["timestamp"] = dt.datetime.fromtimestamp(started).astimezone().isoformat(timespec="seconds")
    return ET.SubElement(root, "testsuite", attributes)


def to_junit(report: dict[str, Any], strict: bool | None = None) -> str:
    """The run's verdicts as JUnit XML; `strict` None: as the run was made (a WARN fails a --strict run)."""
    strict = is_strict(report) if strict is None else strict
    run = report["run"]
    fleet = bool(report.get("fleet")) or any(verdict.get("host") for verdict in report["verdicts"])
    run_host = "" if fleet else str(run.get("host") or "")
    times = _stage_times(report)
    root = ET.Element("testsuites", name=f"rigcheck run {run['id']}")
    suites: dict[tuple[str, str], tuple[ET.Element, dict[str, int]]] = {}
    for verdict in report["verdicts"]:
        host = verdict.get("host") or ""
        key = (host, verdict["stage"])
        if key not in suites:
            suites[key] = (_suite(root, key, times, fleet, run_host), dict.fromkeys(COUNTERS, 0))
        suite, counts = suites[key]
        counts["tests"] += 1
        counter = _case(suite, verdict, strict, (host or WHOLE_FLEET) if fleet else None)
        if counter:
            counts[counter] += 1
    totals = dict.fromkeys(COUNTERS, 0)
    seconds = 0.0
    for suite, counts in suites.values():
        for counter, value in counts.items():
            suite.set(counter, str(value))
            totals[counter] += value
        seconds += float(suite.get("time") or 0)
    for counter in ("tests", "failures", "errors"):  # junit-10.xsd has no `skipped` on <testsuites>
        root.set(counter, str(totals[counter]))
    root.set("time", f"{seconds:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
