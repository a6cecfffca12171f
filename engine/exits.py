"""The one table of rigcheck's exit codes, each with its meaning: every module that returns or reads one imports it.

It imports only the standard library, so stage children (under any interpreter) and the app import it alike.
"""

from __future__ import annotations

from collections.abc import Iterable

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

# Which code a run that met several returns, worst first: stopped, then bad usage (nothing ran), then rigcheck's own
# errors, then what the hardware showed (CRASH over FAIL over INCONCLUSIVE), then OK. A code not in the table ranks
# with rigcheck's own errors: something unexpected is never quieter than a FAIL.
RANK = (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    EXIT_PORT_TAKEN,
    EXIT_ERROR,
    EXIT_NO_STORE,
    EXIT_CRASH,
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
)
_UNKNOWN_RANK = RANK.index(EXIT_NO_STORE)


def combine(codes: Iterable[int]) -> int:
    """The one exit code of several (a host's run, its inter-host links, the fleet's end; a run and --strict), by
    the table's rank, not by number: `combine([3, 7])` is 3 and `combine([1, 7])` is 1. No codes: 0."""
    ranked = [(RANK.index(code) if code in RANK else _UNKNOWN_RANK, code) for code in codes]
    return min(ranked)[1] if ranked else EXIT_OK
