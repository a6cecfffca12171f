"""Fake stages as the runner sees them: a StageInfo naming a function of tests/fake_stages.py."""

from __future__ import annotations

from pathlib import Path

from rigcheck.engine.registry import StageInfo

TESTS_DIR = Path(__file__).resolve().parent
REPO = TESTS_DIR.parent


def fake(name: str, function: str | None = None, timeout: float = 30.0) -> StageInfo:
    """A StageInfo for one of tests/fake_stages.py, run in a real child without the torch fingerprint."""
    return StageInfo(
        name,
        f"fake_stages:{function or name}",
        "test stage",
        {"quick": timeout, "standard": timeout, "full": timeout},
        extra_paths=(str(TESTS_DIR),),
        fingerprint=False,
    )
