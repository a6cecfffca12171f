"""The real `rigcheck` command with the fake stages of fake_stages.py added to its registry, for subprocess tests."""

from __future__ import annotations

import sys

from rigcheck.engine.registry import STAGES
from rigcheck.tui.cli import main
from stage_infos import fake

FAKES = {
    "ok": fake("ok"),
    "warns": fake("warns"),
    "fails": fake("fails"),
    "skips": fake("skips"),
    "segfault": fake("segfault"),
    "hang": fake("hang", timeout=1.0),
    "slow": fake("slow", timeout=120),
    "waits": fake("waits", "polite_wait", timeout=120),  # until cancelled: a cancel ends it at once
    "nap": fake("nap"),
}

if __name__ == "__main__":
    STAGES.update(FAKES)
    sys.exit(main())
