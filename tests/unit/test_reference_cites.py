"""Every source the reference table cites is public or in the repository: `references --all` names no
absolute path (issue 43: it cited a developer machine's /work/shared/DESIGN.md), and a repository path it
names exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REPO_PATH = re.compile(r"\b((?:bench|tests|engine|examples)/[\w./-]*\w)")
ABSOLUTE = re.compile(r"(?<![\w:/.])/(?:work|home|Users|root|tmp|mnt|opt)/\S+")


def cited_paths(text: str) -> tuple[list[str], list[str]]:
    return ABSOLUTE.findall(text), REPO_PATH.findall(text)


def test_references_all_cites_no_absolute_path_and_only_repository_files_that_exist(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from rigcheck.tui.cli import main

    assert main(["references", "--all"]) == 0
    out = capsys.readouterr().out
    absolute, in_repo = cited_paths(out)
    assert not absolute, absolute
    assert "bench/data/reference_sources.md" in in_repo
    assert all((ROOT / path).exists() for path in in_repo), [p for p in in_repo if not (ROOT / p).exists()]


def test_the_path_finder_sees_a_developer_path_and_a_repository_one() -> None:
    absolute, in_repo = cited_paths("as quoted in /work/shared/DESIGN.md section 8; bench/h200x2_burn.txt")
    assert absolute == ["/work/shared/DESIGN.md"] and in_repo == ["bench/h200x2_burn.txt"]
    assert cited_paths("page https://github.com/microsoft/superbenchmark") == ([], [])
