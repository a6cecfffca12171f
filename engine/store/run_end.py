"""How a run ends, decided and written in one place: its status word, its exit code and when it finished.

Every end goes through here: the runner's own (complete, or cancelled on request), the owner's when the
run was interrupted or the store failed, rank 0's fleet run, and the sweep of runs whose engine died.
"""

from __future__ import annotations

import socket
import sqlite3
import time
from dataclasses import dataclass

from rigcheck.engine.exits import EXIT_ERROR, EXIT_INTERRUPTED
from rigcheck.engine.store.liveness import process_alive
from rigcheck.engine.store.schema import StoreBase

RUNNING = "running"
COMPLETE = "complete"
CANCELLED = "cancelled"  # stopped on request (`rigcheck cancel`, the app, SIGTERM to the engine)
INTERRUPTED = "interrupted"  # Ctrl-C in the foreground, or cut off: its engine died
ERROR = "error"  # the store could not be written; the run was stopped


@dataclass(frozen=True)
class RunEnd:
    """A run's end as the store keeps it; exit_code None: nobody was left to give one."""

    status: str
    exit_code: int | None
    error: str | None = None


SWEEP_WAIT_S = 1.0  # how long opening the store waits for another process's lock before leaving the sweep
CUT_OFF = RunEnd(INTERRUPTED, None)  # a run left running by an engine that no longer exists


def run_end(runner_status: str, verdict_code: int, interrupted: bool = False, error: str | None = None) -> RunEnd:
    """The one rule: a store error is an error; a run stopped (Ctrl-C, or cancelled on request) exits 130,
    as Ctrl-C would end it; otherwise the runner's status with the exit code its verdicts give."""
    if error:
        return RunEnd(ERROR, EXIT_INTERRUPTED if interrupted else EXIT_ERROR, error)
    if interrupted:
        return RunEnd(INTERRUPTED, EXIT_INTERRUPTED)
    if runner_status == CANCELLED:
        return RunEnd(CANCELLED, EXIT_INTERRUPTED)
    return RunEnd(runner_status, verdict_code)


class RunEnds(StoreBase):
    """The store's one writer of a run's end columns (finished, status, exit_code, error)."""

    def end_run(self, run_id: int, status: str, exit_code: int | None, error: str | None = None) -> None:
        self.write_end(run_id, RunEnd(status, exit_code, error))

    def write_end(self, run_id: int, end: RunEnd) -> None:
        """Write `end` now; a run that did not complete leaves the stages it was running INTERRUPTED."""
        with self.transaction():
            self._write(
                "UPDATE runs SET finished = ?, status = ?, exit_code = ?, error = coalesce(?, error) WHERE id = ?",
                (time.time(), end.status, end.exit_code, end.error, run_id),
            )
            if end.status != COMPLETE:
                self._write(
                    "UPDATE stages SET status = 'INTERRUPTED' WHERE run_id = ? AND status = 'running'",
                    (run_id,),
                )

    def record_strict(self, run_id: int, exit_code: int) -> None:
        """The run was made with --strict: keep the flag, and the exit code it returned (a WARN made it 1), as the
        front end that applied --strict decided it after the run's end was written."""
        self._write("UPDATE runs SET strict = 1, exit_code = ? WHERE id = ?", (exit_code, run_id))

    def sweep_dead_runs(self) -> list[int]:
        """Runs left running by an engine that no longer exists on this host were cut off: mark them
        interrupted (their finished stages stay as they are). Called when a rigcheck process starts,
        never from a read, and never where the store may only be read. It never fails the opening: on a
        full disk, or while another process holds the store, the runs stay as they are for the next look."""
        if self.read_only:
            return []
        host = socket.gethostname()
        ended = []
        for row in self._read("SELECT id, pid, started, host FROM runs WHERE status = ?", (RUNNING,)):
            if row["host"] == host and not process_alive(row["pid"], row["started"]):
                try:
                    with self.patience(SWEEP_WAIT_S):
                        self.write_end(row["id"], CUT_OFF)
                except sqlite3.OperationalError:  # full, locked, or read-only after all: nothing was written
                    break
                ended.append(row["id"])
        return ended
