"""The console script's first moments exit as a shell reports a death by SIGINT: the table's interrupted code."""

from __future__ import annotations

import signal

from rigcheck.engine.exits import EXIT_INTERRUPTED
from rigcheck.tui import entry


def test_the_start_up_exit_is_the_tables_interrupted_code() -> None:
    assert entry.SIGINT_EXIT == 128 + signal.SIGINT == EXIT_INTERRUPTED
