"""The real `rigcheck` command with the full-disk stages added (store_fault_stages.py and full_disk_stop_stages.py)."""

from __future__ import annotations

import sys
from dataclasses import replace

from rigcheck.engine.registry import STAGES
from store_fault_cli import TESTS_DIR, info

TARGETS = {"fill": "store_fault_stages", "steady": "store_fault_stages", "fill_on_go": "full_disk_stop_stages"}

if __name__ == "__main__":
    sys.path.insert(0, str(TESTS_DIR))
    from rigcheck.tui.cli import main

    STAGES.update({name: replace(info(name), target=f"{module}:{name}") for name, module in TARGETS.items()})
    sys.exit(main())
