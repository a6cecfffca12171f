"""JUnit XML from a report: it parses even when a crashed stage's log holds terminal escapes, and counts add up."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from rigcheck.engine.report.junit import to_junit


def verdict(stage: str, status: str, explanation: str, device: str = "cpu") -> dict:
    return {"stage": stage, "check_name": "stage", "status": status, "explanation": explanation, "device": device}


def test_control_characters_from_a_log_tail_do_not_break_the_xml() -> None:
    tail = "the stage child died of SIGSEGV; last log lines:\n\x1b[31mHIP error\x1b[0m\x00 <here> & there"
    report = {"run": {"id": 7}, "stages": [], "verdicts": [verdict("matmul", "CRASH", tail)]}
    root = ET.fromstring(to_junit(report))
    error = root.find("testsuite/testcase/error")
    assert error is not None and "HIP error" in error.text and "<here> & there" in error.text
    assert root.get("errors") == "1" and root.get("tests") == "1"


def test_counts_per_suite_and_in_total() -> None:
    report = {
        "run": {"id": 1},
        "stages": [{"name": "verify", "started": 10.0, "finished": 12.5}],
        "verdicts": [
            verdict("verify", "PASS", "fine"),
            verdict("verify", "WARN", "close to the tolerance"),
            verdict("verify", "FAIL", "wrong"),
            verdict("probe", "SKIP", "no GPU"),
        ],
    }
    relaxed, strict = ET.fromstring(to_junit(report)), ET.fromstring(to_junit(report, strict=True))
    suite = relaxed.find("testsuite[@name='rigcheck.verify']")
    assert suite is not None and suite.get("time") == "2.500"
    assert (suite.get("tests"), suite.get("failures"), relaxed.get("skipped")) == ("3", "1", "1")
    assert strict.find("testsuite[@name='rigcheck.verify']").get("failures") == "2"
