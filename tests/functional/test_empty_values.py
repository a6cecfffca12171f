"""An empty value for a file, device or UUID option is one line and exit 2, never read as "not given": before,
`run --json ''` wrote no report, `run --baseline ''` used the table, `history --gpu ''` listed every run."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from cli_calls import assert_one_line_error, rigcheck
from rigcheck.engine.run.numbers import given


@pytest.mark.parametrize(
    "args",
    [
        ["run", "probe", "--device", ""],
        ["run", "probe", "--device", "cpu", "--baseline", ""],
        ["run", "probe", "--device", "cpu", "--json", " "],
        ["run", "probe", "--device", "cpu", "--junit", ""],
        ["run", "probe", "--device", "cpu", "--python", ""],
        ["history", "--gpu", ""],
        ["history", "--store", ""],
        ["export", "last", "--format", "md", "--output", ""],
        ["references", "--baseline", ""],
        ["app", "--device", ""],
    ],
)
def test_an_empty_value_is_refused_in_one_line(tmp_path: Path, args: list[str]) -> None:
    store = tmp_path / "s.db"
    flag = next(word for word in reversed(args) if word.startswith("--"))
    assert_one_line_error(rigcheck(*args, store=store, timeout=120), flag, "empty")
    assert not store.exists()  # nothing ran, nothing was stored


def test_the_shared_type_keeps_every_real_value() -> None:
    value = given("a file")
    assert [value(text) for text in ("-", "x.json", " a ")] == ["-", "x.json", " a "]
    for text in ("", " ", "\t"):
        with pytest.raises(argparse.ArgumentTypeError):
            value(text)
