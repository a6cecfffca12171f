"""The gate's one line and its state, pinned word for word and at the edges: the 80-character limit as a
number (not the module's own constant), each summary's words, each "could not" reason, each state's rank and
each style's codes (gate/outcome.py; a mutation sample found these unpinned, issue 45)."""

from __future__ import annotations

import pytest
from rigcheck.engine.events import Status, Verdict
from rigcheck.engine.gate import outcome
from rigcheck.engine.gate.outcome import CRITICAL, OK, UNKNOWN, WARN, could_not_check, fit, state_of, summary


def v(check: str, status: Status, device: str = "cuda:0", **numbers: object) -> Verdict:
    return Verdict("gate", check, status, "", dict(numbers), device=device)


def test_the_line_is_80_characters_at_most_cut_with_dots() -> None:
    assert outcome.LINE_MAX == 80  # Kubernetes' node-problem-detector's one line
    assert fit("x" * 80) == "x" * 80
    assert fit("x" * 81) == "x" * 77 + "..." and len(fit("x" * 81)) == 80
    assert fit("a  b\n c") == "a b c"  # one line, its spaces made single
    assert fit("abcdef", 5) == "ab..."
    assert fit("ab   cdef", 6) == "ab..."  # the cut is stripped before its dots


@pytest.mark.parametrize(
    "why",
    ["NVML could not read it", "needs privilege", "the driver cannot reach it", "cannot be reached", "not readable",
     "not read", "NVML fails to start"],
)  # fmt: skip
def test_each_reason_a_read_failed_is_could_not_check(why: str) -> None:
    assert could_not_check(v("ecc", Status.SKIP, missing=why))
    assert not could_not_check(v("ecc", Status.WARN, missing=why))  # only a SKIP is a check that did not run


@pytest.mark.parametrize("why", ["", "not supported on this GPU", "not read yet", "no such counter"])
def test_a_counter_the_gpu_lacks_is_not_could_not_check(why: str) -> None:
    assert not could_not_check(v("ecc", Status.SKIP, missing=why))


@pytest.mark.parametrize("status", [Status.FAIL, Status.CRASH, Status.TIMEOUT])
def test_each_failure_is_critical_even_beside_a_gap(status: Status) -> None:
    assert state_of([v("ecc", status), v("xid", Status.PASS)], ["kernel log unread"]) == CRITICAL


def test_the_states_in_their_order() -> None:
    assert state_of([v("ecc", Status.PASS)], ["kernel log unread"]) == UNKNOWN
    assert state_of([v("ecc", Status.WARN), v("pcie", Status.SKIP, missing="could not read")]) == UNKNOWN
    assert state_of([]) == UNKNOWN  # nothing checked is never OK
    assert state_of([v("ecc", Status.WARN), v("xid", Status.PASS)]) == WARN
    assert state_of([v("ecc", Status.PASS), v("pcie", Status.SKIP, missing="not supported")]) == OK
    assert outcome.RANK == {"OK": 0, "WARN": 1, "UNKNOWN": 2, "CRITICAL": 3}


def test_each_styles_codes() -> None:
    assert outcome.STYLE_CODES == {
        "rigcheck": {"OK": 0, "WARN": 0, "CRITICAL": 1, "UNKNOWN": 7},
        "nagios": {"OK": 0, "WARN": 1, "CRITICAL": 2, "UNKNOWN": 3},
        "npd": {"OK": 0, "WARN": 0, "CRITICAL": 1, "UNKNOWN": 2},
    }


def test_ok_words() -> None:
    assert summary(OK, [], [], 8) == "OK: 8 GPU(s) healthy"
    assert summary(OK, [], [], 0) == "OK: no GPU, as expected (--expect-gpus 0)"


@pytest.mark.parametrize(
    ("check", "status", "words"),
    [(check, status, words) for (check, status), words in outcome.SHORT.items()],
)
def test_each_health_checks_few_words(check: str, status: Status, words: str) -> None:
    state = CRITICAL if status == Status.FAIL else WARN
    assert summary(state, [v(check, status, "cuda:1")], [], 1) == f"{state}: cuda:1 {words}"


def test_the_short_table_words() -> None:
    assert outcome.SHORT[("ecc", Status.FAIL)] == "uncorrectable ECC"
    assert outcome.SHORT[("row-remap", Status.FAIL)] == "row remap failed"
    assert outcome.SHORT[("fabric", Status.WARN)] == "NVSwitch fabric registering"
    assert len(outcome.SHORT) == 11


def test_a_phrase_names_its_device_once() -> None:
    assert summary(CRITICAL, [v("xid", Status.FAIL, "cuda:2", short="XID 79")], [], 1) == "CRITICAL: cuda:2 XID 79"
    assert summary(CRITICAL, [v("xid", Status.FAIL, "cuda:2", short="cuda:2 lost")], [], 1) == "CRITICAL: cuda:2 lost"
    assert summary(CRITICAL, [v("count", Status.FAIL, "node", short="7 of 8 GPUs")], [], 8) == "CRITICAL: 7 of 8 GPUs"
    assert summary(WARN, [v("clocks", Status.WARN, "cuda:0")], [], 1) == "WARN: cuda:0 clocks"  # no short: its name
    # only the failures make a CRITICAL line, only the WARNs a WARN line
    mixed = [v("ecc", Status.WARN, "cuda:0"), v("ecc", Status.FAIL, "cuda:1"), v("x", Status.TIMEOUT, "cuda:2")]
    assert summary(CRITICAL, mixed, [], 3) == "CRITICAL: cuda:1 uncorrectable ECC; cuda:2 x"
    assert summary(WARN, [*mixed, v("persistence", Status.WARN, "cuda:3")], [], 4) == (
        "WARN: cuda:0 ECC errors; cuda:3 persistence off"
    )


def test_unknown_words() -> None:
    assert summary(UNKNOWN, [], ["kernel log unread", "nvml down"], 1) == "UNKNOWN: kernel log unread; nvml down"
    gaps = [v("ecc", Status.SKIP, "cuda:0", missing="could not read"), v("pcie", Status.SKIP, "cuda:1", missing="")]
    assert summary(UNKNOWN, gaps, [], 2) == "UNKNOWN: cuda:0 ecc not checked"
    assert summary(UNKNOWN, [], [], 0) == "UNKNOWN: no GPU health could be read"


def test_many_causes_keep_what_fits_and_count_the_rest() -> None:
    many = [v("ecc", Status.FAIL, f"cuda:{i}") for i in range(8)]
    line = summary(CRITICAL, many, [], 8)
    assert line.startswith("CRITICAL: cuda:0 uncorrectable ECC; cuda:1 uncorrectable ECC") and len(line) <= 80
    assert line.endswith(" (+6 more)")
    # exactly at the limit the whole line stands; one character more and it is counted
    head = "CRITICAL: "
    cause = "y" * (80 - len(head))
    assert summary(CRITICAL, [v("a", Status.FAIL, "node", short=cause)], [], 1) == head + cause
    longer = summary(CRITICAL, [v("a", Status.FAIL, "node", short=cause + "z")], [], 1)
    assert longer == head + cause[:-3] + "..." and len(longer) == 80


def test_a_first_cause_too_long_for_the_line_is_cut_with_its_count() -> None:
    long = "z" * 90
    one = summary(CRITICAL, [v("a", Status.FAIL, "node", short=long), v("ecc", Status.FAIL, "cuda:1")], [], 2)
    assert one == fit("CRITICAL: " + long + " (+1 more)") and one.endswith("...") and len(one) == 80
    # two causes and their count make exactly 80 characters: both stay; one character more and one goes
    two_fit = [v("a", Status.FAIL, "node", short="w" * 29), v("b", Status.FAIL, "node", short="w" * 29)]
    third = v("c", Status.FAIL, "node", short="w" * 30)
    assert summary(CRITICAL, [*two_fit, third], [], 1) == "CRITICAL: " + "w" * 29 + "; " + "w" * 29 + " (+1 more)"
    over = [two_fit[0], v("b", Status.FAIL, "node", short="w" * 30), third]
    assert summary(CRITICAL, over, [], 1) == "CRITICAL: " + "w" * 29 + " (+2 more)"


def test_a_first_cause_that_fits_only_without_its_count_keeps_what_of_the_count_fits() -> None:
    cause = "q" * 62  # the head and the cause fit in 72 characters; with " (+1 more)" they need 82
    line = summary(CRITICAL, [v("a", Status.FAIL, "node", short=cause), v("ecc", Status.FAIL, "cuda:1")], [], 2)
    assert line == "CRITICAL: " + cause + " (+1..."  # cut at 80, stripped before its dots
    alone = summary(CRITICAL, [v("a", Status.FAIL, "node", short=cause)], [], 1)
    assert alone == "CRITICAL: " + cause  # one cause has no count


def test_a_state_read_back_as_text_says_the_same() -> None:
    critical = "".join(["CRIT", "ICAL"])  # equal to CRITICAL, not the same object: as read back from a store
    assert summary(critical, [v("ecc", Status.FAIL, "cuda:1")], [], 1) == "CRITICAL: cuda:1 uncorrectable ECC"


def test_the_count_a_first_cause_is_weighed_with_is_of_the_others() -> None:
    # eleven causes, the first 60 characters: with its count " (+10 more)" it needs 81, so it is not kept whole
    causes = [v("a", Status.FAIL, "node", short="r" * 60)] + [v("ecc", Status.FAIL, f"cuda:{i}") for i in range(10)]
    line = summary(CRITICAL, causes, [], 11)
    assert line == "CRITICAL: " + "r" * 60 + " (+10 m..." and len(line) == 80
