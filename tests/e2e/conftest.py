"""End-to-end tests: the installed `rigcheck` binary in a real terminal, over SSH, in a browser, under torchrun,
and the wheel itself; each skips, saying why, where the tool it needs is not on the machine."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def rigcheck_binary() -> str:
    """The `rigcheck` script that `pip install` put beside this interpreter: what a user runs."""
    path = Path(sys.executable).with_name("rigcheck")
    if not path.exists():
        pytest.fail(f"{path} is missing: install the project (pip install -e '.[test]') before the end-to-end tests")
    return str(path)
