"""The command a serve tab runs: serve's own interpreter by its absolute path, no shell, and the working
directory kept out of its imports (a planted `rigcheck/` there would otherwise run as serve's user)."""

from __future__ import annotations

import os
import sys

# `-c` puts the working directory into sys.path as '', removed before anything is imported (as detach.py's
# engine start does). PR_SET_PDEATHSIG (1) with SIGKILL ends the app when serve dies, even by SIGKILL; the
# parent pid given is checked after, as serve may have died before the call.
APP_BOOTSTRAP = (
    "import sys; sys.path[:] = [p for p in sys.path if p]; import os\n"
    "try:\n"
    "    import ctypes; ctypes.CDLL(None, use_errno=True).prctl(1, 9, 0, 0, 0)\n"
    "except (OSError, AttributeError):\n"
    "    pass\n"
    "if os.getppid() != int(sys.argv.pop(1)): sys.exit(0)\n"
    "import runpy; runpy.run_module('rigcheck.tui.entry', run_name='__main__', alter_sys=True)"
)


def app_argv(app_args: list[str], python: str = sys.executable) -> list[str]:
    """The command a tab runs, without a shell: this interpreter, isolated from the working directory."""
    return [os.path.abspath(python), "-c", APP_BOOTSTRAP, str(os.getpid()), "app", *app_args]
