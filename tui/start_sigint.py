"""Ctrl-C during start-up taken over as this is imported, and given back once the imports are done: shared by
the console script (tui/entry.py) and `python -m rigcheck.tui.cli`, and importing nothing of rigcheck."""

from __future__ import annotations

import _signal  # the C module `signal` wraps: loaded with the interpreter, so taking SIGINT over imports nothing
import os

TYPE_CHECKING = False  # typing itself is not imported before SIGINT is ours
if TYPE_CHECKING:
    from collections.abc import Callable

# The exit of a process that SIGINT ended, as a shell reports it: the table's EXIT_INTERRUPTED (rigcheck.engine.exits,
# not imported here before SIGINT is ours; tests/unit/test_start_exit.py holds the two equal)
SIGINT_EXIT = 128 + _signal.SIGINT
INTERRUPTED_LINE = b"rigcheck: interrupted\n"


def _leave_at_once(signum: int, frame: object) -> None:
    """Ctrl-C while the imports run: one line, exit 130, and no interpreter shutdown (which could print noise
    about a module that was half imported)."""
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)  # a second Ctrl-C cannot cut this line in two
    try:
        os.write(2, INTERRUPTED_LINE)
    finally:
        os._exit(SIGINT_EXIT)


def _take_sigint() -> bool:
    """Take SIGINT over, unless it was ignored when we started (nohup, a background job) or this is not the main
    thread; whether we did."""
    if _signal.getsignal(_signal.SIGINT) is not _signal.default_int_handler:
        return False
    try:
        _signal.signal(_signal.SIGINT, _leave_at_once)
    except ValueError:  # not the main thread: not a process's start-up
        return False
    return True


_TAKEN = _take_sigint()


def give_back() -> None:
    """SIGINT is KeyboardInterrupt again (the imports are done or failed)."""
    if _TAKEN:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)


def hand_over(command_line: Callable[[], int]) -> int:
    """The imports are done: give SIGINT back and run the command (also `python -m rigcheck.tui.cli`, which
    imports this module first of all, as serve's tabs once ran it and a Ctrl-C in its imports was a traceback)."""
    from rigcheck.engine.exits import EXIT_INTERRUPTED

    give_back()
    try:
        return command_line()
    except KeyboardInterrupt:  # between giving SIGINT back and the command's own handling
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        os.write(2, INTERRUPTED_LINE)
        return EXIT_INTERRUPTED
