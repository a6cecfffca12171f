"""The headline at the top of the Markdown and HTML exports counts every verdict that sets the exit code:
an INCONCLUSIVE verdict (exit 7) was left out, so a run that exited 7 read "5 WARN" or "no FAIL or WARN verdict"."""

from __future__ import annotations

from typing import Any

from rigcheck.engine.report.headline import counts, headline


def report_of(*statuses: str) -> dict[str, Any]:
    return {"verdicts": [{"status": status} for status in statuses], "measurements": []}


def test_an_inconclusive_verdict_is_counted_between_fail_and_warn() -> None:
    report = report_of("WARN", "INCONCLUSIVE", "PASS", "FAIL", "WARN")
    assert counts(report)[0] == [("FAIL", 1), ("INCONCLUSIVE", 1), ("WARN", 2)]
    assert headline(report) == "1 FAIL, 1 INCONCLUSIVE, 2 WARN"


def test_a_run_that_is_only_inconclusive_does_not_read_as_clean() -> None:
    assert headline(report_of("PASS", "INCONCLUSIVE", "NOT JUDGED")) == "1 INCONCLUSIVE"


def test_pass_not_judged_and_skip_alone_still_read_as_nothing_to_look_at() -> None:
    assert headline(report_of("PASS", "NOT JUDGED", "SKIP")) == "no FAIL, INCONCLUSIVE or WARN verdict"
