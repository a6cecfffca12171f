"""The run's one line counting figures judged against a reference, those that had one but could not be judged
(INCONCLUSIVE), and those that had none."""

from __future__ import annotations

from rigcheck.engine.report.judged import Counts, judged_counts, judged_line


def test_the_counts_add_up_over_the_stages_and_say_what_was_not_judged() -> None:
    report = {
        "verdicts": [
            {"check_name": "expectations", "numbers": {"judged": 12, "not_judged": 0}},
            {"check_name": "expectations", "numbers": '{"judged": 4, "not_judged": 5}'},  # as the store keeps it
            {"check_name": "reference", "numbers": {"judged": 99}},
        ]
    }
    assert judged_counts(report) == Counts(16, 5, 0)
    assert judged_line(report) == (
        "figures against a reference: 16 judged, 5 not judged (no reference for their model: peers and history only)"
    )
    assert judged_line({"verdicts": report["verdicts"][:1]}) == "figures against a reference: 12 judged"
    assert judged_line({"verdicts": []}) is None


def test_a_figure_whose_verdict_against_its_reference_was_inconclusive_is_not_counted_judged() -> None:
    def unjudged(check: str, device: str = "cuda:0", stage: str = "matmul") -> dict[str, object]:
        return {"stage": stage, "check_name": check, "status": "INCONCLUSIVE", "device": device, "numbers": "{}"}

    report = {
        "verdicts": [
            {"stage": "matmul", "check_name": "expectations", "status": "NOT JUDGED",
             "numbers": {"judged": 6, "not_judged": 1}},
            unjudged("reference matmul bf16 4096"),
            unjudged("reference matmul bf16 4096"),  # one figure, said twice: counted once
            unjudged("reference matmul bf16 4096", device="cuda:1"),
            unjudged("link host to device pinned 1 GiB", stage="bandwidth"),
            unjudged("peers matmul fp16 4096"),  # peers are no reference: their count is not this line's
            {"stage": "matmul", "check_name": "reference matmul fp32 4096", "status": "WARN", "device": "cuda:0"},
        ]
    }  # fmt: skip
    assert judged_counts(report) == Counts(3, 1, 3)
    assert judged_line(report) == (
        "figures against a reference: 3 judged, 3 could not be judged (someone else's load or a setting in force), "
        "1 not judged (no reference for their model: peers and history only)"
    )
    # never more could-not-be-judged than there were figures with a reference
    capped = {"verdicts": [{"check_name": "expectations", "numbers": {"judged": 1}}, *report["verdicts"][1:4]]}
    assert judged_counts(capped) == Counts(0, 0, 1)
