"""The run's one line counting figures judged against a reference and those that had none."""

from __future__ import annotations

from rigcheck.engine.report.judged import judged_counts, judged_line


def test_the_counts_add_up_over_the_stages_and_say_what_was_not_judged() -> None:
    report = {
        "verdicts": [
            {"check_name": "expectations", "numbers": {"judged": 12, "not_judged": 0}},
            {"check_name": "expectations", "numbers": '{"judged": 4, "not_judged": 5}'},  # as the store keeps it
            {"check_name": "reference", "numbers": {"judged": 99}},
        ]
    }
    assert judged_counts(report) == (16, 5)
    assert judged_line(report) == (
        "figures against a reference: 16 judged, 5 not (no reference for their model: peers and history only)"
    )
    assert judged_line({"verdicts": report["verdicts"][:1]}) == "figures against a reference: 12 judged"
    assert judged_line({"verdicts": []}) is None
