"""Three outcomes, not two: a figure that could not be judged is INCONCLUSIVE (its own exit code) or NOT JUDGED
(nothing to judge it against), never a PASS and never a FAIL, in the exit code and in every front end's map."""

from __future__ import annotations

from rigcheck.engine.events import Status, Verdict, event_from_dict, event_to_dict, worst
from rigcheck.engine.exits import EXIT_CRASH, EXIT_FAIL, EXIT_INCONCLUSIVE, EXIT_OK
from rigcheck.engine.report.failures import fails_the_run
from rigcheck.engine.report.rows import STATUS_CLASS
from rigcheck.engine.run.runner import exit_code_for


def test_inconclusive_ranks_between_warn_and_fail_and_not_judged_between_pass_and_warn() -> None:
    assert worst([Status.PASS, Status.INCONCLUSIVE, Status.WARN]) == Status.INCONCLUSIVE
    assert worst([Status.INCONCLUSIVE, Status.FAIL]) == Status.FAIL  # a figure measured clean and bad wins
    assert worst([Status.PASS, Status.NOT_JUDGED]) == Status.NOT_JUDGED  # a stage never reads PASS over it
    assert worst([Status.NOT_JUDGED, Status.WARN]) == Status.WARN
    assert worst([Status.SKIP, Status.NOT_JUDGED]) == Status.NOT_JUDGED


def test_exit_code_of_inconclusive_is_its_own() -> None:
    assert EXIT_INCONCLUSIVE not in (EXIT_OK, EXIT_FAIL, EXIT_CRASH, 2, 4, 5, 6, 130)
    assert exit_code_for([Status.PASS, Status.INCONCLUSIVE]) == EXIT_INCONCLUSIVE
    assert exit_code_for([Status.WARN, Status.INCONCLUSIVE]) == EXIT_INCONCLUSIVE
    assert exit_code_for([Status.FAIL, Status.INCONCLUSIVE]) == EXIT_FAIL
    assert exit_code_for([Status.CRASH, Status.INCONCLUSIVE]) == EXIT_CRASH
    assert exit_code_for([Status.PASS, Status.NOT_JUDGED, Status.WARN]) == EXIT_OK  # nothing to judge against
    assert exit_code_for([Status.PASS]) == EXIT_OK


def test_every_status_has_a_class_and_inconclusive_is_neither_pass_nor_fail() -> None:
    for status in Status:
        assert status.value in STATUS_CLASS, status
    assert STATUS_CLASS["INCONCLUSIVE"] not in ("pass", "fail", "skip")
    assert STATUS_CLASS["NOT JUDGED"] != "pass"
    assert not fails_the_run("INCONCLUSIVE", strict=True) and not fails_the_run("NOT JUDGED", strict=True)


def test_front_end_maps_style_the_new_classes() -> None:
    from rigcheck.tui.cli_live import CLASS_STYLE
    from rigcheck.tui.widgets.styling import CLASS_VARIABLE

    for kind in set(STATUS_CLASS.values()):
        assert kind in CLASS_STYLE and kind in CLASS_VARIABLE, kind
    assert CLASS_STYLE["inconclusive"] not in (CLASS_STYLE["pass"], CLASS_STYLE["fail"])


def test_junit_counts_inconclusive_as_an_error_not_a_pass() -> None:
    import xml.etree.ElementTree as ET

    from rigcheck.engine.report.junit import _case

    suite = ET.Element("testsuite")
    verdict = {"stage": "matmul", "check_name": "best-fp32", "status": "INCONCLUSIVE", "explanation": "x", "device": ""}
    assert _case(suite, verdict, False, None) == "errors"
    verdict["status"] = "PASS"
    assert _case(suite, verdict, False, None) == ""


def test_new_statuses_travel_through_the_wire() -> None:
    for status in (Status.INCONCLUSIVE, Status.NOT_JUDGED):
        back = event_from_dict(event_to_dict(Verdict("matmul", "best-fp32", status, "why")))
        assert isinstance(back, Verdict) and back.status == status


def test_the_stages_panel_shows_both_in_its_seven_columns() -> None:
    import asyncio

    from rigcheck.tui.widgets.stages_panel import StagesPanel
    from textual.app import App, ComposeResult
    from textual.widgets import DataTable

    class Panel(App):
        def compose(self) -> ComposeResult:
            yield StagesPanel(["matmul", "training"])

    async def cells() -> tuple[str, str]:
        app = Panel()
        async with app.run_test(size=(80, 24)) as pilot:
            panel = app.query_one(StagesPanel)
            panel.set_verdict("matmul", Status.INCONCLUSIVE)
            panel.set_verdict("training", Status.NOT_JUDGED)
            await pilot.pause()
            table = app.query_one(DataTable)
            return str(table.get_cell("matmul", "verdict")), str(table.get_cell("training", "verdict"))

    assert asyncio.run(cells()) == ("INCONCL", "NOT JDG")


def test_strict_fails_a_warn_even_beside_an_inconclusive() -> None:
    from rigcheck.engine.report.failures import strict_code

    assert strict_code(EXIT_INCONCLUSIVE, ["WARN", "INCONCLUSIVE"], True) == EXIT_FAIL
    assert strict_code(EXIT_INCONCLUSIVE, ["WARN", "INCONCLUSIVE"], False) == EXIT_INCONCLUSIVE
    assert strict_code(EXIT_INCONCLUSIVE, ["INCONCLUSIVE"], True) == EXIT_INCONCLUSIVE
