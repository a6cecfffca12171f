"""JUnit XML from a report: it parses even when a crashed stage's log holds terminal escapes, counts add up, it
validates against pytest's own junit-10.xsd (xmllint where installed, a structural check always), junitparser reads
the same counts, and a fleet run's test cases name their hosts."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from consumers import JUNIT_XSD, junit_schema_problems, xmllint_validate
from junitparser import Error, Failure, JUnitXml, Skipped
from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.report.junit import to_junit
from rigcheck.engine.store import Store


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
    assert (
        suite.get("tests"),
        suite.get("failures"),
        relaxed.find("testsuite[@name='rigcheck.probe']").get("skipped"),
    ) == ("3", "1", "1")
    assert strict.find("testsuite[@name='rigcheck.verify']").get("failures") == "2"


ESCAPES = "the stage child died of SIGSEGV; last log lines:\n\x1b[31mHIP error\x1b[0m\x00 <here> & there"
EVERY_STATUS = [
    ("verify", "fp32", Status.PASS, "fine", "cuda:0"),
    ("verify", "bf16", Status.WARN, "close to the tolerance", "cuda:0"),
    ("matmul", "limits", Status.FAIL, "above the limit", "cuda:1"),
    ("matmul", "stage", Status.CRASH, ESCAPES, "cuda:1"),
    ("burn", "stage", Status.TIMEOUT, "ran past its 1 s limit", ""),
    ("health", "ecc", Status.SKIP, "no NVML", ""),
]


def one_host_run(store: Store, strict: bool = False) -> dict[str, Any]:
    run_id = store.begin_run(["verify", "matmul", "burn", "health"], "all", "quick", "python3", [])
    for stage, check, status, text, device in EVERY_STATUS:
        store.record(run_id, Verdict(stage, check, status, text, device=device))
    store.end_run(run_id, "complete", 3)
    if strict:
        store.record_strict(run_id, 3)
    report = store.report(run_id)
    assert report is not None
    return report


def fleet_run(store: Store) -> dict[str, Any]:
    fleet = {"id": "f1", "hosts": ["node-a", "node-b"], "states": {"node-a": "done", "node-b": "done"}}
    run_id = store.begin_fleet_run(["matmul"], "quick", "python3", [], fleet)
    store.record(run_id, Verdict("matmul", "limits", Status.PASS, "fine", device="cuda:0"), host="node-a")
    store.record(run_id, Verdict("matmul", "limits", Status.FAIL, "above the limit", device="cuda:0"), host="node-b")
    store.record(run_id, Verdict("fleet", "versions", Status.PASS, "one driver on every host"))  # no one host's
    store.end_run(run_id, "complete", 1)
    report = store.report(run_id)
    assert report is not None
    return report


RUNS = {"one host": one_host_run, "one host, --strict": lambda s: one_host_run(s, strict=True), "fleet": fleet_run}


@pytest.mark.parametrize("kind", RUNS)
def test_every_file_keeps_to_pytests_junit_schema(tmp_path: Path, kind: str) -> None:
    text = to_junit(RUNS[kind](Store(tmp_path / "s.db")))
    assert junit_schema_problems(text) == []


def test_the_schema_check_finds_skipped_on_testsuites_as_the_old_files_had_it(tmp_path: Path) -> None:
    text = to_junit(one_host_run(Store(tmp_path / "s.db")))
    old = text.replace("<testsuites ", '<testsuites skipped="1" ', 1)
    assert junit_schema_problems(old) == ["testsuites: attribute 'skipped' is not allowed"]
    assert junit_schema_problems(text.replace("system-out>", "stdout>", 2))  # an element it does not know


@pytest.mark.parametrize("kind", RUNS)
def test_xmllint_validates_every_file_against_pytests_junit_schema(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "junit.xml"
    path.write_text(to_junit(RUNS[kind](Store(tmp_path / "s.db"))))
    done = xmllint_validate(path)
    assert done.returncode == 0 and "validates" in done.stderr, done.stderr
    old = tmp_path / "old.xml"  # the same file with `skipped` on <testsuites>, as before, is refused
    old.write_text(path.read_text().replace("<testsuites ", '<testsuites skipped="1" ', 1))
    refused = xmllint_validate(old)
    assert refused.returncode != 0 and "'skipped' is not allowed" in refused.stderr, refused.stderr
    assert JUNIT_XSD.read_text().startswith('<?xml version="1.0"')


def results(case: Any) -> list[str]:
    return [type(result).__name__ for result in case.result]


@pytest.mark.parametrize("strict", [False, True])
def test_junitparser_reads_the_counts_and_results_rigcheck_wrote(tmp_path: Path, strict: bool) -> None:
    xml = JUnitXml.fromstring(to_junit(one_host_run(Store(tmp_path / "s.db"), strict=strict)))
    suites = {suite.name: suite for suite in xml}
    assert set(suites) == {"rigcheck.verify", "rigcheck.matmul", "rigcheck.burn", "rigcheck.health"}
    assert (xml.tests, xml.failures, xml.errors) == (6, 2 if strict else 1, 2)
    assert sum(suite.skipped for suite in xml) == 1
    for suite in xml:
        assert suite.tests == len(list(suite))
        assert suite.failures == sum(isinstance(r, Failure) for case in suite for r in case.result)
        assert suite.errors == sum(isinstance(r, Error) for case in suite for r in case.result)
        assert suite.skipped == sum(isinstance(r, Skipped) for case in suite for r in case.result)
    cases = {(case.classname, case.name): case for suite in xml for case in suite}
    assert results(cases[("rigcheck.verify", "bf16 [cuda:0]")]) == (["Failure"] if strict else [])
    assert results(cases[("rigcheck.matmul", "limits [cuda:1]")]) == ["Failure"]
    crash = cases[("rigcheck.matmul", "stage [cuda:1]")]
    assert results(crash) == ["Error"] and "HIP error" in crash.result[0].text and crash.result[0].type == "CRASH"
    assert results(cases[("rigcheck.health", "ecc")]) == ["Skipped"]


def test_a_fleet_run_names_the_host_in_every_test_case(tmp_path: Path) -> None:
    xml = JUnitXml.fromstring(to_junit(fleet_run(Store(tmp_path / "s.db"))))
    cases = [(suite, case) for suite in xml for case in suite]
    names = {(case.classname, case.name): results(case) for _, case in cases}
    assert names == {
        ("rigcheck.matmul", "limits [node-a cuda:0]"): [],
        ("rigcheck.matmul", "limits [node-b cuda:0]"): ["Failure"],
        ("rigcheck.fleet", "versions [all hosts]"): [],
    }
    hosts = {suite.name: suite.hostname for suite, _ in cases}
    assert hosts == {
        "rigcheck.matmul on node-a": "node-a",
        "rigcheck.matmul on node-b": "node-b",
        "rigcheck.fleet on all hosts": None,
    }


def test_a_run_of_one_host_keeps_its_names_and_says_its_host_once_per_suite(tmp_path: Path) -> None:
    report = one_host_run(Store(tmp_path / "s.db"))
    root = ET.fromstring(to_junit(report))
    assert {suite.get("hostname") for suite in root.iter("testsuite")} == {report["run"]["host"]}
    assert all(report["run"]["host"] not in case.get("name") for case in root.iter("testcase"))


def test_export_follows_the_strict_flag_stored_with_the_run(tmp_path: Path) -> None:
    store = Store(tmp_path / "s.db")
    relaxed, strict = one_host_run(store), one_host_run(store, strict=True)
    assert ET.fromstring(to_junit(relaxed)).get("failures") == "1"
    assert ET.fromstring(to_junit(strict)).get("failures") == "2"
    assert ET.fromstring(to_junit(strict, strict=False)).get("failures") == "1"  # asked for otherwise
