"""Unit tests: one module's logic in this process, with fake hardware; a unit test leaves no process running."""

from __future__ import annotations

from collections.abc import Iterator

import psutil
import pytest


@pytest.fixture(autouse=True)
def no_process_left() -> Iterator[None]:
    """A unit test may run a short command to its end (a compiler, say) but must not leave one behind."""
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    yield
    left = [p for p in psutil.Process().children(recursive=True) if p.pid not in before]
    _, alive = psutil.wait_procs(left, timeout=10)
    assert not alive, f"a unit test left processes running: {[p.pid for p in alive]}"
