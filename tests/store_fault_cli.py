"""The real `rigcheck` command with the stages of store_fault_stages.py added, for runs in a tiny file system."""

from __future__ import annotations

import sys
from pathlib import Path

from rigcheck.engine.registry import STAGES, StageInfo

TESTS_DIR = Path(__file__).resolve().parent


def info(name: str) -> StageInfo:
    return StageInfo(
        name,
        f"store_fault_stages:{name}",
        "test stage",
        {"quick": 60.0, "standard": 60.0, "full": 60.0},
        extra_paths=(str(TESTS_DIR),),
        fingerprint=False,
    )


if __name__ == "__main__":
    sys.path.insert(0, str(TESTS_DIR))
    from rigcheck.tui.cli import main

    STAGES.update({name: info(name) for name in ("fill", "leaves_partial", "steady")})
    sys.exit(main())
