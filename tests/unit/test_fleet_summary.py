"""The fleet summary rank 0 prints: its words come from the row model, as the old hand-built text had them."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.report.fleet_summary import fleet_summary


def verdict(stage: str, status: str, explanation: str | None, host: str) -> dict[str, Any]:
    return {"stage": stage, "check_name": "c", "status": status, "explanation": explanation, "host": host, "t": 1.0}


def figure(name: str, value: float, unit: str | None, conditions: dict[str, Any] | None) -> dict[str, Any]:
    return {"stage": "fleet-links", "name": name, "value": value, "unit": unit, "conditions": conditions, "host": "a"}


def test_the_summary_takes_first_lines_and_trust_from_the_rows() -> None:
    report = {
        "run": {"id": 7, "profile": "quick"},
        "fleet": {"hosts": ["a", "b"], "states": {"a": "done"}},
        "stages": [{"name": "probe", "status": "PASS", "host": "a"}],
        "verdicts": [
            verdict("fleet-links", "PASS", "all right", "a"),
            verdict("fleet-links", "PASS", "all right", "b"),
            verdict("fleet", "WARN", "b is slow\nits figures follow", "b"),
            verdict("fleet-links", "FAIL", None, ""),
            verdict("matmul", "FAIL", "not the fleet's", "a"),
        ],
        "measurements": [
            figure("all_reduce 1 GiB", 1234.56, "GB/s", {"trust": "SUSPECT"}),
            figure("all_gather 1 GiB", 99.0, None, None),
        ],
    }
    assert fleet_summary(report).splitlines() == [
        "fleet run 7: 2 host(s), profile quick",
        "  a                done     probe PASS",
        "  b                ?        no stage reported",
        "across the fleet:",
        "  PASS    inter-host collectives: 2 checks on 2 host(s), every element right",
        "  WARN    b: b is slow",
        "  FAIL    ",
        "inter-host links:",
        f"  {'all_reduce 1 GiB':<40}    1,234.6 GB/s SUSPECT",
        f"  {'all_gather 1 GiB':<40}       99.0",
    ]
