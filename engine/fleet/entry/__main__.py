"""The fleet agent's entry point, as torchrun's `-m rigcheck.fleet` names it."""

import sys

from rigcheck.engine.fleet.main import agent_main

sys.exit(agent_main())
