"""The one table of rigcheck's exit codes, each with its meaning: every module that returns or reads one imports it.

It imports nothing, so stage children (under any interpreter) and the app import it alike.
"""

from __future__ import annotations

EXIT_OK = 0  # every verdict PASS, NOT JUDGED, WARN or SKIP
EXIT_FAIL = 1  # any FAIL (or any WARN with --strict): a figure measured clean and found bad
EXIT_USAGE = 2  # bad usage, said in one line before anything runs
EXIT_CRASH = 3  # any CRASH or TIMEOUT
EXIT_ERROR = 4  # the store (or an output file) could not be written mid-way; a stage child whose parent went away
EXIT_NO_STORE = 5  # the fleet's store (torchrun's) could not be reached or stopped answering
EXIT_PORT_TAKEN = 6  # serve: another program already listens on the port asked for
EXIT_INCONCLUSIVE = 7  # no FAIL, CRASH or TIMEOUT, but a verdict INCONCLUSIVE: a figure could not be judged
# (someone else's load, a setting that changes it, too noisy); never a reason to drain the hardware
EXIT_NOT_CHECKED = EXIT_INCONCLUSIVE  # check: the node could not be checked (no NVML, a reader failed): never an OK
EXIT_INTERRUPTED = 130  # stopped: Ctrl-C, a signal made into it, or a cancel request
