"""The fleet agent's entry point, as torchrun's `-m rigcheck.fleet` names it."""

import os
import sys

# started without -P or PYTHONSAFEPATH=1 (or on 3.10, which has neither): what the agent imports next (torch, numpy)
if not getattr(sys.flags, "safe_path", False):
    sys.path[:] = [entry for entry in sys.path if entry not in ("", os.getcwd())]  # never from the current folder

from rigcheck.engine.exits import EXIT_ERROR
from rigcheck.engine.measure.table_file import BrokenTable

try:
    from rigcheck.engine.fleet.main import agent_main
except BrokenTable as broken:  # the installed reference table: damaged, or not a file
    print(f"rigcheck fleet: {broken}: reinstall rigcheck", file=sys.stderr)
    sys.exit(EXIT_ERROR)

sys.exit(agent_main())
