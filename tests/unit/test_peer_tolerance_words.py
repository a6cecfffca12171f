"""`--peer-tolerance`: the help and the README say what the rule does (off the median of the peers, either way),
and the rule does it (issue 43: the help said 'below the best', the README 'off the median either way')."""

from __future__ import annotations

import argparse
from pathlib import Path

from rigcheck.engine.run.options import add_run_options
from rigcheck.engine.trust.peers import off_median

README = Path(__file__).resolve().parents[2] / "README.md"


def help_of_peer_tolerance() -> str:
    parser = argparse.ArgumentParser()
    add_run_options(parser)
    (action,) = [a for a in parser._actions if "--peer-tolerance" in a.option_strings]
    return " ".join(str(action.help).split())


def test_the_help_says_off_the_median_either_way_as_the_readme_does() -> None:
    words = help_of_peer_tolerance()
    assert "median" in words and "either way" in words and "best" not in words, words
    readme = " ".join(README.read_text().split())
    assert "off the median of its peers, above or below (`--peer-tolerance PERCENT`" in readme


def test_the_rule_names_a_gpu_off_the_median_either_way_beyond_the_tolerance_only() -> None:
    peers = {"a": 100.0, "b": 101.0, "c": 99.0}
    named = lambda value: [u for u, *_ in off_median({**peers, "x": value}, 0.10)]  # noqa: E731
    assert named(112.0) == ["x"] and named(88.0) == ["x"]  # 12% above and below its peers' median (100)
    assert named(109.0) == [] and named(91.0) == []  # 9% either way: inside the tolerance
    assert [u for u, *_ in off_median({"a": 100.0, "b": 150.0}, 0.10)] == ["a"]  # of two, only the slower
