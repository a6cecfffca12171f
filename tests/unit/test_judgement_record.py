"""A figure's judgement record (engine/trust/judgement.py) as a report reads it: what it stores, what it reads back
from any store (one with the structured detail, one from before it, a hand-written or partial one) and the words and
trust the reports show. Every expected value is written out by hand."""

from __future__ import annotations

from typing import Any

import pytest
from rigcheck.engine.events import Trust
from rigcheck.engine.trust.judgement import (
    Expected,
    Judgement,
    Reason,
    note_words,
    reason_words,
    trust_in,
    trust_word,
)

RIVAL = "1 other process(es) on the GPU: python3 (pid 825, 1.0 GiB); next: `nvidia-smi` lists them"
SLOW = "clocks held back by HW_SLOWDOWN; next: check the cooling"


def test_a_reason_is_its_words_with_its_kind_numbers_and_what_it_involved() -> None:
    reason = Reason(RIVAL, "gpu-processes", True, {"processes": 1}, ["python3 (pid 825)", 7])
    assert reason == RIVAL and reason.text == RIVAL and type(reason.text) is str
    assert reason.detail() == {
        "kind": "gpu-processes",
        "outside": True,
        "numbers": {"processes": 1},
        "involved": ["python3 (pid 825)", "7"],
    }
    bare = Reason("a reason in words")
    assert bare.detail() == {"kind": "unknown", "outside": False, "numbers": {}, "involved": []}


def test_an_expectation_keeps_only_what_it_has() -> None:
    held = Expected(800.0, "reference", "the H200's published MAMF", 0.5)
    assert held.as_dict() == {"value": 800.0, "basis": "reference", "source": "the H200's published MAMF", "ratio": 0.5}
    assert Expected(none_why="no reference").as_dict() == {"none_why": "no reference"}
    assert Expected(0.0, ratio=0.0).as_dict() == {"value": 0.0, "ratio": 0.0}  # a zero is a number, kept


def test_an_expectation_reads_back_numbers_as_numbers_and_nothing_else() -> None:
    back = Expected.from_dict({"value": 800, "basis": "history", "source": "5 earlier runs", "ratio": 1})
    assert back == Expected(800.0, "history", "5 earlier runs", 1.0)
    assert isinstance(back.value, float) and isinstance(back.ratio, float)
    odd = Expected.from_dict({"value": "800", "ratio": None, "none_why": "no peer"})
    assert odd == Expected(None, "", "", None, "no peer")
    assert Expected.from_dict({}) == Expected()


def judged() -> Judgement:
    return Judgement(
        Trust.SUSPECT,
        [Reason(RIVAL, "gpu-processes", True, {"processes": 1.0}, ["python3 (pid 825)"]), Reason(SLOW, "slowdown")],
        ["a note"],
    )


def test_a_judgement_stores_each_key_a_figure_keeps() -> None:
    assert judged().stored() == {
        "trust": "SUSPECT",
        "trust_reasons": [RIVAL, SLOW],
        "trust_outside": [RIVAL],
        "trust_detail": [
            {
                "kind": "gpu-processes",
                "outside": True,
                "numbers": {"processes": 1.0},
                "involved": ["python3 (pid 825)"],
            },
            {"kind": "slowdown", "outside": False, "numbers": {}, "involved": []},
        ],
        "notes": ["a note"],
    }
    whole = Judgement(Trust.TRUSTED, [], [], Expected(800.0, "reference"), "likely cause: none", "nothing to do")
    assert whole.stored() == {
        "trust": "TRUSTED",
        "trust_reasons": [],
        "trust_outside": [],
        "trust_detail": [],
        "notes": [],
        "expectation": {"value": 800.0, "basis": "reference"},
        "cause": "likely cause: none",
        "next_step": "nothing to do",
    }


def test_only_a_suspect_figure_with_a_reason_outside_is_outside_the_hardware() -> None:
    assert judged().outside == [RIVAL] and judged().outside_hardware
    assert judged().kinds() == {"gpu-processes", "slowdown"}
    inside = Judgement(Trust.SUSPECT, [Reason(SLOW, "slowdown")])
    assert inside.outside == [] and not inside.outside_hardware
    noisy = Judgement(Trust.NOISY, [Reason("timing spread 9% of the median", "spread")], [RIVAL])
    assert not noisy.outside_hardware
    # a reason outside on a figure that is not SUSPECT (as a hand-written store may hold) does not make it so,
    # whichever side of SUSPECT its word sorts
    for trust in (Trust.BROKEN, Trust.NOISY, Trust.TRUSTED, Trust.UNJUDGED):
        assert not Judgement(trust, [Reason(RIVAL, "gpu-processes", True)]).outside_hardware
        stored = Judgement.of({"trust": trust.value, "trust_reasons": [RIVAL]})
        assert stored is not None and stored.outside == [RIVAL] and not stored.outside_hardware


def test_a_judgement_reads_back_whole() -> None:
    whole = Judgement(Trust.NOISY, [Reason("timing spread 9%", "spread", False, {"spread_rel": 0.09})], ["n"])
    whole.expectation, whole.cause, whole.next_step = Expected(800.0, "reference", "", 0.5), "c", "s"
    back = Judgement.of(whole.stored())
    assert back == whole
    assert back is not None and back.reasons[0].detail() == whole.reasons[0].detail()


def test_the_detail_kept_decides_kind_and_outside_over_the_words() -> None:
    stored: dict[str, Any] = {
        "trust": "SUSPECT",
        "trust_reasons": [RIVAL, "some words"],
        "trust_outside": [],
        "trust_detail": [
            {"kind": "gpu-processes", "outside": False, "numbers": {"processes": 2, "name": "x"}, "involved": [825]},
            {"kind": "clocks", "outside": True},
        ],
    }
    back = Judgement.of(stored)
    assert back is not None
    first, second = back.reasons
    assert (first.kind, first.outside, first.numbers, first.involved) == (
        "gpu-processes",
        False,
        {"processes": 2.0},
        ("825",),
    )
    assert (second.kind, second.outside, second.numbers, second.involved) == ("clocks", True, {}, ())
    assert back.notes == [] and back.expectation is None and back.cause is None and back.next_step is None


def test_a_detail_that_does_not_match_the_reasons_is_not_read() -> None:
    """One detail for two reasons (a partial store): each reason is read as a store from before the detail was."""
    stored = {
        "trust": "SUSPECT",
        "trust_reasons": [RIVAL, SLOW],
        "trust_outside": [SLOW],
        "trust_detail": [{"kind": "clocks", "outside": False}, "not a detail"],
    }
    back = Judgement.of(stored)
    assert back is not None
    assert [(r.kind, r.outside) for r in back.reasons] == [("gpu-processes", False), ("slowdown", True)]


def test_more_details_than_reasons_are_not_read_either() -> None:
    """Two details for one reason: which detail is whose cannot be told, so the reason is read from its words."""
    stored = {
        "trust": "SUSPECT",
        "trust_reasons": [RIVAL],
        "trust_detail": [{"kind": "clocks", "outside": False}, {"kind": "slowdown", "outside": False}],
    }
    back = Judgement.of(stored)
    assert back is not None and [(r.kind, r.outside) for r in back.reasons] == [("gpu-processes", True)]
    assert back.outside_hardware


def test_an_empty_detail_reads_as_one_from_before_it() -> None:
    back = Judgement.of({"trust": "SUSPECT", "trust_reasons": [RIVAL], "trust_outside": [], "trust_detail": [{}]})
    assert back is not None and [(r.kind, r.outside) for r in back.reasons] == [("gpu-processes", False)]


@pytest.mark.parametrize(
    "words, kind, outside",
    [
        (RIVAL, "gpu-processes", True),
        (
            "another process that rigcheck cannot see (another container or PID namespace) holds 2 GiB",
            "unseen-user",
            True,
        ),
        ("run(s) 4 used the same device at the same time (--force)", "shared-run", True),
        ("this figure's 8 threads share a cgroup CPU quota of 2 CPUs: the quota set its pace", "cpu-quota", True),
        ("other processes kept 6.0 of 8 CPUs busy while this figure needed 8", "cpu-load", True),
        (SLOW, "slowdown", False),
        ("SM clock at 60% of what this GPU holds for the same work", "clocks", False),
        ("too short to judge: 3 telemetry samples in 0.5 s", "too-short", False),
        ("timing spread 9% of the median", "spread", False),
        ("words no kind has used", "unknown", False),
    ],
)
def test_a_store_from_before_trust_outside_reads_kind_and_outside_from_the_words(
    words: str, kind: str, outside: bool
) -> None:
    back = Judgement.of({"trust": "SUSPECT", "trust_reasons": [words]})
    assert back is not None
    (reason,) = back.reasons
    assert (reason.kind, reason.outside, reason.numbers, reason.involved) == (kind, outside, {}, ())
    assert back.outside_hardware is outside


def test_a_store_with_trust_outside_but_no_detail_reads_outside_from_that_list() -> None:
    """trust_outside kept: it alone says which reasons lie outside, whatever their words."""
    back = Judgement.of({"trust": "SUSPECT", "trust_reasons": [RIVAL, SLOW], "trust_outside": [SLOW]})
    assert back is not None and [(r.kind, r.outside) for r in back.reasons] == [
        ("gpu-processes", False),
        ("slowdown", True),
    ]
    back = Judgement.of({"trust": "SUSPECT", "trust_reasons": [RIVAL], "trust_outside": None})
    assert back is not None and [r.outside for r in back.reasons] == [False]


def test_a_reason_named_only_as_outside_is_still_one_and_only_once() -> None:
    shared = "run(s) 4 used the same device at the same time (--force)"
    back = Judgement.of({"trust": "SUSPECT", "trust_reasons": [SLOW], "trust_outside": [shared, shared, SLOW]})
    assert back is not None
    assert [(str(r), r.kind, r.outside) for r in back.reasons] == [
        (SLOW, "slowdown", True),
        (shared, "shared-run", True),
    ]


def test_no_trust_no_judgement() -> None:
    assert Judgement.of(None) is None
    assert Judgement.of({}) is None
    assert Judgement.of({"trust": "a word from later", "trust_reasons": ["x"]}) is None
    back = Judgement.of({"trust": "TRUSTED"})
    assert back == Judgement(Trust.TRUSTED, [], [], None, None, None)


def test_what_a_store_keeps_beside_the_reasons_reads_back_as_written() -> None:
    back = Judgement.of(
        {
            "trust": "NOISY",
            "notes": ["launch-bound", 3],
            "expectation": {"value": 800, "basis": "reference", "ratio": 0.5},
            "cause": "likely cause: thermal",
            "next_step": "check the fans",
        }
    )
    assert back == Judgement(
        Trust.NOISY,
        [],
        ["launch-bound", "3"],
        Expected(800.0, "reference", "", 0.5),
        "likely cause: thermal",
        "check the fans",
    )
    blank = Judgement.of({"trust": "NOISY", "expectation": "800", "cause": "", "next_step": ""})
    assert blank == Judgement(Trust.NOISY, [], [], None, None, None)


def test_the_words_and_trust_a_report_shows() -> None:
    conditions = {"trust": "SUSPECT", "trust_reasons": [RIVAL, 7], "notes": ["a note", 2]}
    assert trust_in(conditions) is Trust.SUSPECT
    assert trust_in({"trust": "LATER"}) is None and trust_in(None) is None and trust_in({}) is None
    assert trust_word(conditions) == "SUSPECT" and trust_word({"trust": "LATER"}) == "LATER"
    assert trust_word({"trust": ""}) is None and trust_word(None) is None and trust_word({}) is None
    assert reason_words(conditions) == [RIVAL, "7"] and note_words(conditions) == ["a note", "2"]
    assert reason_words(None) == [] and note_words(None) == []
    assert reason_words({"trust_reasons": None}) == [] and note_words({"notes": None}) == []
