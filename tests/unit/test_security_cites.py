"""Every test SECURITY.md cites beside a promise exists: a promise whose test is gone is a promise nobody checks."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CITED = re.compile(r"`([^`]+)`")


def cited_tests(text: str) -> list[tuple[str, str | None]]:
    """(file, test name or None) for each test cited in a table row's last cell; a bare `test_x` names a test of
    the file cited before it in the same cell, and a trailing `*` stands for any ending."""
    found = []
    for line in text.splitlines():
        if not line.startswith("|") or line.startswith("| ---"):
            continue
        cell = line.rstrip().rstrip("|").rsplit("|", 1)[-1]
        current = None
        for word in CITED.findall(cell):
            if word.startswith("tests/"):
                current, _, name = word.partition("::")
                found.append((current, name or None))
            elif word.startswith("test_") and current is not None:
                found.append((current, word))
    return found


def test_every_cited_test_exists() -> None:
    cites = cited_tests((REPO / "SECURITY.md").read_text())
    assert len(cites) > 20, "SECURITY.md's tables were not read"
    missing = []
    for file, name in cites:
        path = REPO / file
        if not path.is_file():
            missing.append(file)
            continue
        if name is None:
            continue
        pattern = re.escape(name.rstrip("*")) + (r"\w*" if name.endswith("*") else "") + r"\("
        if not re.search(rf"^\s*(async )?def {pattern}", path.read_text(), re.MULTILINE):
            missing.append(f"{file}::{name}")
    assert missing == [], f"SECURITY.md cites tests that do not exist: {missing}"


def test_a_missing_test_is_caught() -> None:
    row = "| a promise | `tests/functional/test_control.py`, `test_no_such_test`, `tests/functional/test_gone.py` |"
    assert cited_tests(row) == [
        ("tests/functional/test_control.py", None),
        ("tests/functional/test_control.py", "test_no_such_test"),
        ("tests/functional/test_gone.py", None),
    ]
