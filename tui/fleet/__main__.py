"""The fleet agent's entry point, as torchrun's `-m rigcheck.fleet` names it."""

import sys

from rigcheck.tui.cli_fleet import agent_main

sys.exit(agent_main())
