"""The `rigcheck` console script: Ctrl-C at any moment of start-up ends in one line and exit 130, never a traceback.

Importing the command line takes a few hundred milliseconds (rich, argparse, the engine). A Ctrl-C in that time used
to print a KeyboardInterrupt traceback from whichever import it hit, and sometimes "Exception ignored" noise at
shutdown. So this module imports nothing of rigcheck but tui/start_sigint.py, which takes SIGINT over as soon as
it is imported: the console script that pip writes still compiles a regular expression between importing `main`
and calling it. Until the imports are done, a Ctrl-C writes one line and leaves at once (nothing has been opened
or written yet); then Ctrl-C is KeyboardInterrupt again and `rigcheck.tui.cli.main` handles it as each command needs.

Only the console script (and `python -m rigcheck.tui.entry`) should import this module. Before it runs, SIGINT is
the interpreter's: it ends the process by the signal, or, while `site` runs the environment's `.pth` files, Python
reports its own failed start (tests/functional/test_start_interrupt.py measures where rigcheck's part begins).
"""

from __future__ import annotations

import sys

from rigcheck.tui.start_sigint import INTERRUPTED_LINE, SIGINT_EXIT, give_back, hand_over

__all__ = ["INTERRUPTED_LINE", "SIGINT_EXIT", "hand_over", "main"]


def main() -> int:
    """Import the command line (or only the health gate's, issue 44), give SIGINT back, and run the command."""
    try:
        from rigcheck.engine.exits import EXIT_ERROR
        from rigcheck.engine.measure.table_file import BrokenTable
        from rigcheck.tui.gate_entry import gate_command_of, gate_main

        if gate_command_of(sys.argv[1:]) is not None:  # the health gate loads only what it reads with
            return hand_over(lambda: gate_main(sys.argv[1:]) or 0)
        try:
            from rigcheck.tui.cli import main as command_line
        except BrokenTable as broken:  # the installed reference table: damaged, or not a file (issue 44)
            give_back()
            print(f"rigcheck: {broken}: reinstall rigcheck (`check` and `slurm-health` do not use it)", file=sys.stderr)
            return EXIT_ERROR
    except BaseException:
        give_back()
        raise
    return hand_over(command_line)


if __name__ == "__main__":
    sys.exit(main())
