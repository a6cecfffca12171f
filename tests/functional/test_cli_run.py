"""`rigcheck run` as a user sees it: streams, exit codes, --strict, --junit and stages named twice, on fake stages."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest
from cli_calls import rigcheck
from consumers import junit_schema_problems
from prometheus_client.parser import text_string_to_metric_families
from rigcheck.engine.store import Store
from stage_infos import TESTS_DIR

LONG_SENTENCE = "it worked, but [only just]: 3 of 4 tries gave the same answer, and a run on a quiet host is needed"


def run_cli(*args: str, store: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The real command in a subprocess, with the fake stages registered (tests/cli_driver.py)."""
    env = dict(os.environ, RIGCHECK_STORE=str(store), COLUMNS="80")
    command = [sys.executable, str(TESTS_DIR / "cli_driver.py"), "run", *args, "--no-telemetry"]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, check=False, cwd=TESTS_DIR)


@dataclass(frozen=True)
class Runs:
    """Runs made once for the module's tests that only read them: each costs a start of the CLI and its child."""

    store: Path
    relaxed: subprocess.CompletedProcess[str]  # run 1: ok, warns
    strict: subprocess.CompletedProcess[str]  # run 2: the same under --strict, with --junit
    junit: Path  # run 2's JUnit file


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    folder = tmp_path_factory.mktemp("cli-run")
    store, junit = folder / "s.db", folder / "strict.xml"
    relaxed = run_cli("ok", "warns", store=store)
    strict = run_cli("ok", "warns", "--strict", "--junit", str(junit), store=store)
    return Runs(store, relaxed, strict, junit)


def test_summary_alone_on_stdout_unwrapped_and_each_verdict_once(runs: Runs) -> None:
    done = runs.relaxed
    assert done.returncode == 0, done.stderr
    # stdout: the summary tables only; a long sentence stays on one line although COLUMNS=80
    assert "rigcheck run 1" in done.stdout and "measurements" in done.stdout
    assert [line for line in done.stdout.splitlines() if LONG_SENTENCE in line]
    assert done.stdout.count("it worked, but") == 1 and done.stdout.count("it worked ") == 1
    assert "> ok" not in done.stdout and "stored in" not in done.stdout
    # stderr: progress, one line per stage start and end, and where the run is stored; no verdict sentence
    assert "> ok on cpu" in done.stderr and "< ok: PASS (1 PASS)" in done.stderr
    assert "< warns: WARN (1 WARN)" in done.stderr and "stored in" in done.stderr
    assert "it worked" not in done.stderr


def test_exit_codes_follow_the_worst_verdict(tmp_path: Path) -> None:
    """Any exit other than 0 ends with one line saying what it means (issue 43; not said on the old code)."""
    quiet = run_cli("ok", "skips", store=tmp_path / "s.db")
    assert quiet.returncode == 0 and not quiet.stderr.strip().splitlines()[-1].startswith("exit ")
    failed = run_cli("ok", "fails", store=tmp_path / "s.db")
    assert failed.returncode == 1 and failed.stderr.strip().splitlines()[-1].startswith("exit 1: 1 verdict failed")
    crashed = run_cli("fails", "segfault", store=tmp_path / "s.db")
    assert crashed.returncode == 3 and crashed.stderr.strip().splitlines()[-1].startswith("exit 3: 1 stage crashed")


def test_strict_makes_a_warn_fail_the_run(runs: Runs, tmp_path: Path) -> None:
    assert runs.relaxed.returncode == 0
    assert runs.strict.returncode == 1 and "--strict: 1 WARN" in runs.strict.stderr
    assert run_cli("ok", "--strict", store=tmp_path / "s.db").returncode == 0  # nothing to fail on


def stored_outcome(store: Path, run: str) -> dict[str, object]:
    """What `history` and each export say of a run's exit code and failures."""
    history = rigcheck("history", store=store).stdout
    row = next(line.split() for line in history.splitlines() if line.split()[:1] == [run])
    as_json = json.loads(rigcheck("export", run, "--format", "json", store=store).stdout)
    prom = {
        family.name: family.samples[0].value
        for family in text_string_to_metric_families(rigcheck("export", run, "--format", "prom", store=store).stdout)
    }
    junit = ET.fromstring(rigcheck("export", run, "--format", "junit", store=store).stdout)
    return {
        "history exit": row[6],  # run, date, time, took, status, worst, exit
        "json": (as_json["run"]["exit_code"], as_json["run"]["strict"], as_json["failures"]),
        "prom": (prom["rigcheck_run_exit_code"], prom["rigcheck_run_strict"], prom["rigcheck_run_failures"]),
        "junit failures": junit.get("failures"),
    }


def test_strict_is_stored_with_the_exit_code_it_returned(runs: Runs) -> None:
    assert runs.relaxed.returncode == 0 and runs.strict.returncode == 1
    relaxed, strict = stored_outcome(runs.store, "1"), stored_outcome(runs.store, "2")
    assert relaxed == {"history exit": "0", "json": (0, 0, 0), "prom": (0, 0, 0), "junit failures": "0"}
    assert strict == {"history exit": "1", "json": (1, 1, 1), "prom": (1, 1, 1), "junit failures": "1"}


def test_a_stage_named_twice_runs_once_in_order_of_first_mention(tmp_path: Path) -> None:
    done = run_cli("skips", "ok", "skips", "ok", store=tmp_path / "s.db")
    assert done.returncode == 0, done.stderr
    started = [line.split()[1] for line in done.stderr.splitlines() if line.startswith("> ")]
    assert started == ["skips", "ok"]
    assert [s["name"] for s in Store(tmp_path / "s.db").report(1)["stages"]] == ["skips", "ok"]


Outcome = tuple[subprocess.CompletedProcess[str], Path]


@pytest.fixture(scope="module")
def every_outcome(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """One run with a stage of each outcome, a hung one among them, and its JUnit file."""
    folder = tmp_path_factory.mktemp("cli-run-every")
    out = folder / "junit.xml"
    stages = ("ok", "warns", "fails", "skips", "segfault", "hang")
    return run_cli(*stages, "--junit", str(out), store=folder / "s.db"), out


def test_a_timeout_streams_plain_text_without_markup_tags(every_outcome: Outcome) -> None:
    done, _ = every_outcome
    assert done.returncode == 3
    assert "TIMEOUT: ran past its 1 s limit" in done.stderr
    assert "[red]" not in done.stderr and "[/]" not in done.stderr and "Traceback" not in done.stderr


def test_junit_has_one_case_per_verdict_with_failures_errors_and_skips(every_outcome: Outcome) -> None:
    done, out = every_outcome
    assert done.returncode == 3 and done.stdout
    root = ET.parse(out).getroot()
    assert root.tag == "testsuites"
    assert {k: root.get(k) for k in ("tests", "failures", "errors")} == {"tests": "6", "failures": "1", "errors": "2"}
    assert sum(int(suite.get("skipped")) for suite in root.iter("testsuite")) == 1  # the schema has it only there
    assert junit_schema_problems(out.read_text()) == []
    cases = {case.get("classname"): case for case in root.iter("testcase")}
    assert set(cases) == {f"rigcheck.{s}" for s in ("ok", "warns", "fails", "skips", "segfault", "hang")}
    assert [child.tag for child in cases["rigcheck.ok"]] == ["system-out"]
    assert [child.tag for child in cases["rigcheck.warns"]] == ["system-out"]  # WARN passes without --strict
    assert cases["rigcheck.fails"].find("failure").get("type") == "FAIL"
    assert cases["rigcheck.segfault"].find("error").get("type") == "CRASH"
    assert "SIGSEGV" in cases["rigcheck.segfault"].find("error").text
    assert cases["rigcheck.hang"].find("error").get("type") == "TIMEOUT"
    assert cases["rigcheck.skips"].find("skipped") is not None


def test_junit_under_strict_counts_a_warn_as_a_failure(runs: Runs) -> None:
    assert runs.strict.returncode == 1
    cases = {case.get("classname"): case for case in ET.parse(runs.junit).getroot().iter("testcase")}
    assert cases["rigcheck.warns"].find("failure").get("type") == "WARN"
    assert cases["rigcheck.ok"].find("failure") is None


def test_two_stores_in_one_folder_keep_their_own_logs(tmp_path: Path) -> None:
    for name in ("a.db", "b.db"):
        assert run_cli("ok", store=tmp_path / name).returncode == 0
    assert (tmp_path / "a.logs" / "run-1" / "ok.log").is_file()
    assert (tmp_path / "b.logs" / "run-1" / "ok.log").is_file()
    assert not (tmp_path / "logs").exists()
    stage = Store(tmp_path / "b.db").report(1)["stages"][0]
    assert stage["log_path"] == str(tmp_path / "b.logs" / "run-1" / "ok.log")
