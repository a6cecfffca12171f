"""The real app with only quick fake stages in its registry, for tests that drive it through a terminal."""

from __future__ import annotations

import sys

from rigcheck.engine.registry import STAGES
from rigcheck.tui.cli import main
from stage_infos import fake

if __name__ == "__main__":
    STAGES.clear()
    # slow waits until cancelled: a cancel ends it at once, not after the runner's kill grace
    STAGES.update({"ok": fake("ok"), "slow": fake("slow", "polite_wait", timeout=120)})
    sys.exit(main())
