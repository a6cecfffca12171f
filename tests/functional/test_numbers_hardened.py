"""Numbers on the command line: NaN, infinity and numbers out of range are one line and exit 2; run numbers are
ASCII digits within SQLite's integers; a store name too long for the file system is one line too."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest
from cli_calls import assert_one_line_error, rigcheck
from rigcheck.engine.fleet.main import agent_main
from rigcheck.engine.run.numbers import bounded_float, bounded_int, parse_count
from rigcheck.engine.store import Store

NOT_FINITE = ["nan", "NaN", "inf", "-inf", "Infinity", "1e999"]


@pytest.mark.parametrize(
    ("flag", "bad"),
    [
        ("--timeout", [*NOT_FINITE, "0", "-1", "1e9"]),
        ("--wait-quiet", [*NOT_FINITE, "-1", "1e9"]),
        ("--duration", [*NOT_FINITE, "0", "1e9"]),
        ("--peer-tolerance", [*NOT_FINITE, "0", "100"]),
    ],
)
def test_run_refuses_numbers_that_are_not_finite_or_out_of_range(tmp_path: Path, flag: str, bad: list[str]) -> None:
    store = tmp_path / "s.db"
    for value in bad:
        assert_one_line_error(rigcheck("run", "probe", "--device", "cpu", f"{flag}={value}", store=store), flag)
    assert not store.exists()  # nothing ran


@pytest.mark.parametrize("value", ["nan", "inf", "1e-9", "0", "-1"])
def test_monitor_refuses_an_interval_that_is_not_finite_or_too_short(tmp_path: Path, value: str) -> None:
    done = rigcheck("monitor", f"--interval={value}", "--count", "1", store=tmp_path / "s.db", timeout=60)
    assert_one_line_error(done, "--interval")


@pytest.mark.parametrize("flag", ["--join-timeout", "--lost-after", "--phase-timeout", "--collective-timeout"])
def test_the_fleet_agent_refuses_waits_that_are_not_finite(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    for value in ("nan", "inf", "0"):
        assert agent_main(["probe", f"{flag}={value}"]) == 2
        lines = capsys.readouterr().err.strip().splitlines()
        assert len(lines) == 1 and flag in lines[0], lines


def test_the_shared_number_type_takes_plain_decimals_only() -> None:
    seconds = bounded_float(0, 10, above=True)
    assert [seconds(text) for text in ("1", "2.5", " 3 ", ".5", "1e1", "+7")] == [1.0, 2.5, 3.0, 0.5, 10.0, 7.0]
    for text in ("nan", "inf", "0", "10.5", "١", "1_0", "0x1", "", "1e999", "-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            seconds(text)
    assert bounded_int(1, 5)("5") == 5 and bounded_int(0)("0") == 0
    for text in ("6", "0", "١", "-1", "nan"):
        with pytest.raises(argparse.ArgumentTypeError):
            bounded_int(1, 5)(text)
    assert parse_count("9223372036854775807") == 2**63 - 1
    assert [parse_count(text) for text in ("9223372036854775808", "١", "1_0", "-1", "+1", " 1", "")] == [None] * 7


@pytest.mark.parametrize(
    "args",
    [
        ["history", "--limit", "9" * 30],
        ["history", "--limit", "-5"],
        ["runs", "--limit", "١"],
        ["monitor", "--count", "0"],
    ],
)
def test_whole_number_options_are_ascii_digits_in_range(tmp_path: Path, args: list[str]) -> None:
    assert_one_line_error(rigcheck(*args, store=tmp_path / "s.db", timeout=60), args[1])


@pytest.fixture
def store_with_two_runs(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    store = Store(path)
    for _ in range(2):
        store.begin_run(["probe"], "cpu", "quick", sys.executable, [])
    return path


@pytest.mark.parametrize(
    "args",
    [["show"], ["export"], ["follow"], ["cancel"], ["compare", "1"]],
    ids=["show", "export", "follow", "cancel", "compare"],
)
@pytest.mark.parametrize("run", [str(2**63), "9" * 40, "١", "۲", "1_0"])
def test_run_numbers_are_ascii_digits_within_sqlites_range(
    store_with_two_runs: Path, args: list[str], run: str
) -> None:
    done = rigcheck(*args, run, store=store_with_two_runs, timeout=60)
    assert_one_line_error(done, "bad run")


def test_the_largest_run_number_is_looked_up_not_refused(store_with_two_runs: Path) -> None:
    assert_one_line_error(rigcheck("show", str(2**63 - 1), store=store_with_two_runs), f"no run {2**63 - 1}")


def test_a_store_name_too_long_for_the_file_system_is_one_line(tmp_path: Path) -> None:
    store = tmp_path / ("a" * 300)
    assert_one_line_error(rigcheck("history", store=store), "cannot be opened", "File name too long")
    assert_one_line_error(
        rigcheck("history", "--store", str(store), store=tmp_path / "s.db"), "cannot be opened", "File name too long"
    )
