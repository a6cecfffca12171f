"""The `rigcheck` console script: Ctrl-C at any moment of start-up ends in one line and exit 130, never a traceback.

Importing the command line takes a few hundred milliseconds (rich, argparse, the engine). A Ctrl-C in that time used
to print a KeyboardInterrupt traceback from whichever import it hit, and sometimes "Exception ignored" noise at
shutdown. So this module imports nothing of rigcheck, and takes SIGINT over as soon as it is imported: the console
script that pip writes still compiles a regular expression between importing `main` and calling it. Until the
imports are done, a Ctrl-C writes one line and leaves at once (nothing has been opened or written yet); then Ctrl-C
is KeyboardInterrupt again and `rigcheck.tui.cli.main` handles it as each command needs.

Only the console script (and `python -m rigcheck.tui.entry`) should import this module. Before it runs, SIGINT is
the interpreter's: it ends the process by the signal, or, while `site` runs the environment's `.pth` files, Python
reports its own failed start (tests/functional/test_start_interrupt.py measures where rigcheck's part begins).
"""

from __future__ import annotations

import _signal  # the C module `signal` wraps: loaded with the interpreter, so taking SIGINT over imports nothing
import os
import sys

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


def main() -> int:
    """Import the command line (or only the health gate's, issue 44), give SIGINT back, and run the command."""
    try:
        from rigcheck.tui.gate_entry import gate_command_of, gate_main

        if gate_command_of(sys.argv[1:]) is not None:  # the health gate loads only what it reads with
            return hand_over(lambda: gate_main(sys.argv[1:]) or 0)
        from rigcheck.tui.cli import main as command_line
    except BaseException:
        _give_back()
        raise
    return hand_over(command_line)


def _give_back() -> None:
    if _TAKEN:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)


def hand_over(command_line: Callable[[], int]) -> int:
    """The imports are done: give SIGINT back and run the command (also `python -m rigcheck.tui.cli`, which
    imports this module first of all, as serve's tabs once ran it and a Ctrl-C in its imports was a traceback)."""
    from rigcheck.engine.exits import EXIT_INTERRUPTED

    _give_back()
    try:
        return command_line()
    except KeyboardInterrupt:  # between giving SIGINT back and the command's own handling
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        os.write(2, INTERRUPTED_LINE)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
